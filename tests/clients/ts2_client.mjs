// A TypeScript SDK v2 client (@modelcontextprotocol/client 2.x) that answers questions: call the
// plan's tools, answering every elicitation with the plan's answer, print a JSON report.
// Usage: node ts2_client.mjs PLAN.json -- SERVER_COMMAND...   (stdio)
//        node ts2_client.mjs PLAN.json --url URL              (streamable HTTP)
// PLAN: {"mode": "auto" | "legacy", "calls": [{"name", "arguments"}], "answer": ElicitResult,
//        "model": {"text", "model"}, "env"?: {...}}
// REPORT: {"protocol", "era", "asked": [message...], "calls": {name: {"isError", "text"}}, "errors"}
// (run with NODE_PATH unset; resolves @modelcontextprotocol/client from the node_modules folder
// next to a copy of this file)
import { readFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const report = { errors: [], asked: [], calls: {} };
// versionNegotiation.mode: "legacy" (the default) is the 2025 initialize handshake; "auto" probes
// with server/discover and takes 2026-07-28 when the server offers it.
const client = new Client(
  { name: "ts2-input", version: "0" },
  { capabilities: { elicitation: { form: {} }, sampling: {} }, versionNegotiation: { mode: plan.mode } },
);
// One handler per kind serves both eras: a 2025 server-to-client request, and (auto-fulfilled by
// the client, inputRequired.autoFulfill defaults to true) an input request of a 2026 input_required result.
client.setRequestHandler("elicitation/create", async (request) => {
  report.asked.push(request.params.message);
  return plan.answer;
});
client.setRequestHandler("sampling/createMessage", async (request) => {
  const content = request.params.messages[0].content;
  report.asked.push(content.type === "text" ? content.text : "?");
  return { role: "assistant", content: { type: "text", text: plan.model.text }, model: plan.model.model };
});
// close() aborts the transport's own requests in flight (the 2025 session's GET stream): an
// AbortError reported while closing is the client's doing, kept apart; any other error is the tour's.
let closing = false;
report.abortedWhileClosing = [];
client.onerror = (error) => {
  const text = `onerror: ${String(error).slice(0, 500)}`;
  (closing && error?.name === "AbortError" ? report.abortedWhileClosing : report.errors).push(text);
};

let transport;
if (process.argv[3] === "--url") {
  transport = new StreamableHTTPClientTransport(new URL(process.argv[4]));
} else {
  const command = process.argv.slice(4);
  transport = new StdioClientTransport({ command: command[0], args: command.slice(1), env: plan.env, stderr: "inherit" });
}

await client.connect(transport);
report.protocol = client.getNegotiatedProtocolVersion();
report.era = client.getProtocolEra();
for (const call of plan.calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments });
    const texts = result.content.filter((b) => b.type === "text").map((b) => b.text);
    report.calls[call.name] = { isError: Boolean(result.isError), text: texts.join("\n") };
  } catch (error) {
    report.errors.push(`call ${call.name}: ${String(error).slice(0, 500)}`);
  }
}
closing = true;
await client.close();
console.log(JSON.stringify(report));
