"""The editor's views, one module per thing they act on (page, tabs, nodes, edges,
segments, settings, runs, the Inspector's fragments and Node details)."""
