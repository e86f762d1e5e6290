"""`rtvbench publish`: a static site over a whole store (docs/publish.md)."""
