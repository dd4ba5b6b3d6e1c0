"""data layer (see ARCHITECTURE §1)."""
