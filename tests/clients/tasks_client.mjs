// A requester of the MCP tasks extension (io.modelcontextprotocol/tasks, SEP-2663) built from the
// npm package @modelcontextprotocol/ext-tasks (its `client` entry point) on a TypeScript SDK v2
// Client (@modelcontextprotocol/client 2.x) in the 2026-07-28 era, against the tools of
// tests/tasks_support.py. Prints one JSON object per line, each with a "step":
//   connected  {protocol, era, extension (the server's capability value), execution}
//   count      the `count` tool through session.callTool: {kind, statuses, messages, outcome, text}
//   hold       `hold` started, then cancelled: {kind, before, outcome, final (status on tasks/get)}
//   fail       `fail`: {kind, outcome, code, message}
//   ask        `ask`, its elicitation answered through tasks/update: {kind, asked, outcome, text}
//   plain      `plain` (a tool that forbids tasks): {kind, text}
//   refused    `hold` through the SDK's own callTool, which declares no extension: {code, message, data}
//   headers    HTTP only: the Mcp-Method / Mcp-Name headers of every tasks/* POST
//   done       {errors}
// Usage: node tasks_client.mjs [--legacy] --url URL              (streamable HTTP)
//        node tasks_client.mjs [--legacy] -- SERVER_COMMAND...   (stdio; the server gets this process's env)
// --legacy: the 2025-11-25 initialize handshake instead, where the extension is not offered: the
// package's session then runs every call plainly; prints connected, then
//   legacy     {count: {kind, outcome, text}, hold: {code, message}} (hold cannot run without a task)
// (run with NODE_PATH unset; resolves both packages from the node_modules folder next to a copy of
// this file)
import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  JsonRpcResponseError,
  TaskFailedError,
} from "@modelcontextprotocol/ext-tasks/client";

const TASKS = "io.modelcontextprotocol/tasks";
const legacy = process.argv[2] === "--legacy";
const args = process.argv.slice(legacy ? 3 : 2);
const errors = [];
const print = (line) => console.log(JSON.stringify(line));
const textOf = (result) => result.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");

// The package leaves the 2026-07-28 task wire to the host ("rawDispatch": the SDK Client's own
// request path rejects a resultType "task" result). This one is chained onto the connected
// transport: its requests carry string ids of their own prefix, which the SDK's numeric ids never
// take, and their responses are taken off the transport before the Client sees them.
class RawChannel {
  constructor(transport) {
    this.transport = transport;
    this.pending = new Map();
    this.next = 0;
    const passOn = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (!this.settle(message)) passOn?.(message, extra);
    };
    const closed = transport.onclose;
    transport.onclose = () => {
      for (const { reject } of this.pending.values()) reject(new Error("the connection closed"));
      this.pending.clear();
      closed?.();
    };
  }

  settle(message) {
    const id = message?.id;
    if (typeof id !== "string" || !id.startsWith("raw-") || "method" in message) return false;
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    if (waiting === undefined) return true;
    if ("error" in message) waiting.resolve({ kind: "error", error: message.error });
    else waiting.resolve({ kind: "result", result: message.result });
    return true;
  }

  // RawClientDispatch: (request, options) => Promise<JsonRpcResponse>
  dispatch = (request, options) => {
    const id = `raw-${++this.next}`;
    const message = { jsonrpc: "2.0", id, method: request.method, ...(request.params ? { params: request.params } : {}) };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const headers = options?.context?.headers;
      this.transport.send(message, headers ? { headers } : {}).catch((error) => {
        this.pending.delete(id);
        reject(error);
      });
    });
  };
}

const capabilities = { elicitation: { form: {} } };
const clientInfo = { name: "ext-tasks-requester", version: "0" };
const client = new Client(clientInfo, { capabilities, versionNegotiation: { mode: legacy ? "legacy" : "auto" } });
// close() aborts the transport's own requests in flight: an AbortError reported while closing is
// the client's doing and not counted; any other error is.
let closing = false;
client.onerror = (error) => {
  if (!(closing && error?.name === "AbortError")) errors.push(`onerror: ${String(error).slice(0, 300)}`);
};

const seen = [];
let transport;
if (args[0] === "--url") {
  // Records what reached the wire for tasks/*: SEP-2663 has the client set Mcp-Name to params.taskId.
  const recording = async (url, init) => {
    const body = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
    if (typeof body?.method === "string" && body.method.startsWith("tasks/")) {
      const headers = new Headers(init.headers);
      seen.push({ method: body.method, mcpMethod: headers.get("mcp-method"), mcpName: headers.get("mcp-name"),
                  taskId: body.params?.taskId });
    }
    return fetch(url, init);
  };
  transport = new StreamableHTTPClientTransport(new URL(args[1]), { fetch: recording });
} else {
  const command = args.slice(1);
  transport = new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env },
                                          stderr: "inherit" });
}

await client.connect(transport);
const asked = [];
// The package's minimal form for a server without 2026-07-28 tasks; the raw path for one with them.
const wire = legacy ? {} : {
  rawDispatch: new RawChannel(transport).dispatch,
  v2RequestFraming: { protocolVersion: client.getNegotiatedProtocolVersion(), clientInfo, clientCapabilities: capabilities },
};
const session = createTaskSessionFromClient(client, {
  endpointId: "mcp-providers-tasks-test",
  ...wire,
  onInputRequest: createApplicationInputHandler({
    elicitation: async (request) => {
      asked.push(request.params.message);
      return { action: "accept", content: { ok: true } };
    },
    sampling: async () => { throw new Error("no sampling here"); },
    roots: async () => ({ roots: [] }),
  }),
  onError: (error) => errors.push(`session: ${String(error).slice(0, 300)}`),
});
print({
  step: "connected",
  protocol: client.getNegotiatedProtocolVersion(),
  era: client.getProtocolEra(),
  extension: client.getServerCapabilities()?.extensions?.[TASKS] ?? null,
  execution: session.capabilities.execution,
});

async function step(name, body) {
  try {
    print({ step: name, ...(await body()) });
  } catch (error) {
    errors.push(`${name}: ${String(error).slice(0, 500)}`);
  }
}

// How an execution settled: "completed" with the result's text, "failed" with its error, or "cancelled".
function settled(outcome) {
  if (outcome.status === "completed") return { outcome: "completed", text: textOf(resultFromTaskOutcome(outcome)) };
  if (outcome.status === "failed") {
    const error = outcome.error;
    return { outcome: "failed", code: error instanceof TaskFailedError ? error.code : null, message: error.message };
  }
  return { outcome: outcome.status };
}

if (legacy) {
  await step("legacy", async () => {
    const count = await session.callTool("count", { n: 2 });
    const counted = { kind: count.kind, ...settled((await count.settle()).outcome) };
    try {
      const hold = await session.callTool("hold", { seconds: 1 });
      return { count: counted, hold: { kind: hold.kind, ...settled((await hold.settle()).outcome) } };
    } catch (error) {
      if (!(error instanceof JsonRpcResponseError)) throw error;
      return { count: counted, hold: { code: error.code, message: error.message } };
    }
  });
  closing = true;
  await session.close();
  await client.close();
  print({ step: "done", errors });
  process.exit(0);
}

await step("count", async () => {
  const execution = await session.callTool("count", { n: 3, pause: 0.3 });
  const statuses = [];
  const messages = [];
  const { outcome } = await execution.settle({
    onEvent: (event) => {
      if (event.type !== "task") return;
      statuses.push(event.task.status);
      if (event.task.statusMessage !== undefined) messages.push(event.task.statusMessage);
    },
  });
  return { kind: execution.kind, statuses, messages, ...settled(outcome) };
});

await step("hold", async () => {
  const execution = await session.callTool("hold", { seconds: 60 });
  if (execution.kind !== "task") return { kind: execution.kind };
  const task = session.task(execution.handle.taskId);
  const before = (await task.snapshot()).status;
  await execution.cancel();
  const { outcome } = await execution.settle();
  let final = (await task.snapshot()).status;
  for (let i = 0; i < 100 && !["cancelled", "completed", "failed"].includes(final); i++) {
    await new Promise((done) => setTimeout(done, 50));
    final = (await task.snapshot()).status;
  }
  return { kind: execution.kind, before, outcome: outcome.status, final };
});

await step("fail", async () => {
  const execution = await session.callTool("fail", {});
  return { kind: execution.kind, ...settled((await execution.settle()).outcome) };
});

await step("ask", async () => {
  const execution = await session.callTool("ask", {});
  return { kind: execution.kind, asked, ...settled((await execution.settle()).outcome) };
});

await step("plain", async () => {
  const execution = await session.callTool("plain", {});
  return { kind: execution.kind, ...settled((await execution.settle()).outcome) };
});

await step("refused", async () => {
  try {
    const result = await client.callTool({ name: "hold", arguments: { seconds: 1 } });
    return { code: null, text: textOf(result) };
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    return { code: error.code, message: error.message, data: error.data ?? null };
  }
});

if (args[0] === "--url") print({ step: "headers", seen });
closing = true;
await session.close();
await client.close();
print({ step: "done", errors });
