// A TypeScript SDK 1.x client of a composed server with an upstream: read a resource and a
// template expansion, call a tool, subscribe (2025) and wait for notifications/resources/updated.
// Usage: node ts_upstream_client.mjs PLAN.json -- SERVER_COMMAND...   (stdio)
//        node ts_upstream_client.mjs PLAN.json --url URL              (streamable HTTP)
// PLAN: {env, read, templated, call: {name, arguments}, watched, toggle, waitMs}. Prints one JSON
// line: {errors, read, templated, called, updated}. (Resolves @modelcontextprotocol/sdk
// from the node_modules folder next to a copy of this file.)
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const report = { errors: [], updated: [] };
const client = new Client({ name: "ts-upstream", version: "0" });
let transport;
if (process.argv[3] === "--url") {
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(process.argv[4]));
} else {
  const command = process.argv.slice(4);
  transport = new StdioClientTransport({ command: command[0], args: command.slice(1), env: plan.env, stderr: "inherit" });
}

async function step(name, action) {
  try {
    return await action();
  } catch (error) {
    report.errors.push(`${name}: ${String(error).slice(0, 500)}`);
    return null;
  }
}

let arrived;
const update = new Promise((resolve) => (arrived = resolve));
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
  report.updated.push(notification.params.uri);
  arrived();
});

await client.connect(transport);
const read = await step("read", () => client.readResource({ uri: plan.read }));
report.read = read ? read.contents.map((c) => c.text ?? "") : [];
const templated = await step("templated", () => client.readResource({ uri: plan.templated }));
report.templated = templated ? templated.contents.map((c) => c.text ?? "") : [];
const called = await step("call", () => client.callTool(plan.call));
report.called = called ? { isError: Boolean(called.isError), text: called.content.map((b) => b.text ?? "") } : null;
await step("subscribe", () => client.subscribeResource({ uri: plan.watched }));
// The upstream's toggle is per upstream session, which an HTTP server shares between its clients:
// toggle until it says `to` ("Started": it sends one update at once; "Stopped": a running interval
// keeps it from exiting when its stdin closes).
async function toggle(to) {
  for (let i = 0; i < 2; i++) {
    const toggled = await step("toggle", () => client.callTool({ name: plan.toggle, arguments: {} }));
    if (!toggled || toggled.content[0].text.startsWith(to)) return;
  }
  report.errors.push(`the upstream's updates were not ${to}`);
}
await toggle("Started");
const timer = new Promise((resolve) => setTimeout(resolve, plan.waitMs));
await Promise.race([update, timer]);
if (report.updated.length === 0) report.errors.push(`no notifications/resources/updated within ${plan.waitMs} ms`);
await toggle("Stopped");
await client.close();
console.log(JSON.stringify(report));
process.exit(0);
