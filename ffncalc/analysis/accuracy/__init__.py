"""How close the plans are: published measurements held against the plans, one module per kind of plan."""
