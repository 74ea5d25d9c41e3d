"""The Classroom pack's nodes, by theme."""
