"""Port statistics: the stats endpoint, its cache and the Stats tab (a later issue)."""
