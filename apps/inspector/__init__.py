"""The Teaching Inspector panel, Node details and the outputs API (a later issue)."""
