"""data layer (see DESIGN.md §1)."""
