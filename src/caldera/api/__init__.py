"""Pure data: quantities, Pods, Nodes, selectors. No I/O besides parsing dicts."""
