"""The MCP methods the pipeline serves: resources, tools, prompts, completion, subscriptions."""
