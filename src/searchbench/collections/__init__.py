"""collections layer (see ARCHITECTURE §1)."""
