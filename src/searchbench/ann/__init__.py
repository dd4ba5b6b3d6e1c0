"""ann layer (see DESIGN.md §1)."""
