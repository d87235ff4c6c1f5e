"""Adapters: how a model of one shape reads one interface (declared once in ``models/adapters.yaml``)."""
