"""The node catalogue: base.py declares what a node is, library/ holds the built-in nodes."""
