"""Running the service: administrators' view of users, credits, plans and usage, with an audit log."""
