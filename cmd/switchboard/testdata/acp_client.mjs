// A scripted ACP client on the official TypeScript SDK
// (@agentclientprotocol/sdk), for the end-to-end tests: it runs
// `switchboard acp` as its agent and is driven by the Go test through its
// own stdio. Commands arrive as JSON lines on stdin ({"op": ..., "tag": ...});
// everything the agent sends, and the result of each command, is printed
// as one JSON line on stdout, in the order it happened.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as readline from "node:readline";
import * as acp from "@agentclientprotocol/sdk";

const [bin, ...args] = process.argv.slice(2);
const child = spawn(bin, ["acp", ...args], { stdio: ["pipe", "pipe", "inherit"] });
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
child.on("exit", (code) => out({ ev: "agent_exit", code }));

let policy = "allow"; // allow | always | reject | hold

const app = acp
  .client({ name: "switchboard-e2e" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const u = params.update;
    const text = u.content && u.content.type === "text" ? u.content.text : undefined;
    out({ ev: "update", session: params.sessionId, kind: u.sessionUpdate, status: u.status, toolCallId: u.toolCallId, title: u.title, text, update: u });
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal }) => {
    out({ ev: "permission", session: params.sessionId, toolCallId: params.toolCall.toolCallId, options: params.options.map((o) => o.optionId) });
    const pick = (kind) => params.options.find((o) => o.kind === kind);
    if (policy === "hold") {
      // Wait until the agent withdraws the request (decided elsewhere).
      await new Promise((resolve) => {
        if (signal.aborted) return resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
      out({ ev: "permission_withdrawn", toolCallId: params.toolCall.toolCallId });
      return { outcome: { outcome: "cancelled" } };
    }
    const kind = { allow: "allow_once", always: "allow_always", reject: "reject_once" }[policy];
    const opt = pick(kind) || pick("allow_once");
    out({ ev: "permission_answer", optionId: opt.optionId });
    return { outcome: { outcome: "selected", optionId: opt.optionId } };
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

await app.connectWith(stream, async (ctx) => {
  const rl = readline.createInterface({ input: process.stdin });
  const run = async (cmd, method, params) => {
    try {
      const result = await ctx.request(method, params);
      out({ ev: "result", op: cmd.op, tag: cmd.tag, result });
    } catch (e) {
      out({ ev: "error", op: cmd.op, tag: cmd.tag, message: String(e && e.message ? e.message : e), data: e && e.data });
    }
  };
  for await (const line of rl) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    switch (cmd.op) {
      case "initialize":
        run(cmd, acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
        break;
      case "new":
        run(cmd, acp.methods.agent.session.new, { cwd: cmd.cwd, mcpServers: [] });
        break;
      case "list":
        run(cmd, acp.methods.agent.session.list, {});
        break;
      case "load":
        run(cmd, acp.methods.agent.session.load, { sessionId: cmd.session, cwd: cmd.cwd, mcpServers: [] });
        break;
      case "prompt":
        run(cmd, acp.methods.agent.session.prompt, { sessionId: cmd.session, prompt: [{ type: "text", text: cmd.text }] });
        break;
      case "cancel":
        await ctx.notify(acp.methods.agent.session.cancel, { sessionId: cmd.session });
        out({ ev: "result", op: cmd.op, tag: cmd.tag, result: {} });
        break;
      case "set_mode":
        run(cmd, acp.methods.agent.session.setMode, { sessionId: cmd.session, modeId: cmd.mode });
        break;
      case "policy":
        policy = cmd.policy;
        out({ ev: "result", op: cmd.op, tag: cmd.tag, result: {} });
        break;
      case "quit":
        rl.close();
        return;
    }
  }
});
child.stdin.end();
