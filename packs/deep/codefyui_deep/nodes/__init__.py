"""The Deep learning pack's nodes, by theme."""
