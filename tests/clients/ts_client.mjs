// A TypeScript SDK 1.x client: tour a server, print a JSON report.
// Usage: node ts_client.mjs PLAN.json -- SERVER_COMMAND...   (stdio)
//        node ts_client.mjs PLAN.json --url URL              (streamable HTTP)
// (run with NODE_PATH unset; resolves
// @modelcontextprotocol/sdk from the node_modules folder next to a copy of this file)
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const report = { errors: [], calls: {} };
const client = new Client({ name: "ts-matrix", version: "0" });
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

await client.connect(transport);
report.server = client.getServerVersion();
const tools = await step("tools/list", () => client.listTools());
report.tools = tools ? tools.tools.map((t) => t.name).sort() : [];
const resources = await step("resources/list", () => client.listResources());
report.resources = resources ? resources.resources.length : 0;
const templates = await step("resources/templates/list", () => client.listResourceTemplates());
report.templates = templates ? templates.resourceTemplates.length : 0;
const prompts = await step("prompts/list", () => client.listPrompts());
report.prompts = prompts ? prompts.prompts.length : 0;
report.reads = {};
for (const uri of plan.reads) {
  const read = await step(`read ${uri}`, () => client.readResource({ uri }));
  report.reads[uri] = read ? read.contents.length : 0;
}
const done = await step("complete", () =>
  client.complete({ ref: { type: "ref/resource", uri: plan.complete.template }, argument: plan.complete.argument }),
);
report.completions = done ? done.completion.values : [];
for (const call of plan.calls) {
  const result = await step(`call ${call.name}`, () => client.callTool({ name: call.name, arguments: call.arguments }));
  if (result) {
    report.calls[call.name] = {
      isError: Boolean(result.isError),
      types: result.content.map((b) => b.type),
      structured: result.structuredContent !== undefined,
    };
  }
}
const got = await step("prompts/get", () => client.getPrompt({ name: plan.prompt.name, arguments: plan.prompt.arguments }));
report.promptMessages = got ? got.messages.length : 0;
await client.close();
console.log(JSON.stringify(report));
