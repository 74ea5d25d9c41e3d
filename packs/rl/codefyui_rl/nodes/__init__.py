"""The Reinforcement learning pack's nodes."""
