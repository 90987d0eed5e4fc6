"""The pipeline's steps: the exchange, gate, invoker, evidence, wire, custody receipts and audit."""
