"""Reinforcement-learning agents: one observation-to-(policy, value) shell around any central module."""
