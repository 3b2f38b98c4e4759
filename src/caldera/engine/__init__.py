"""The scheduling engine: one cycle per pod over the NodeTable, shared by every driver."""
