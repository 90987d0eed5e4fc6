"""DocuMCP's app-serving resources, rebuilt as built-in plugins at the same ``documcp://`` URIs."""
