"""The Foundations pack's nodes, by theme."""
