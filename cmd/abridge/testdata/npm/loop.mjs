// A small tool-using agent on an official npm client: API=responses uses
// the openai package's responses.create, API=messages the
// @anthropic-ai/sdk package's messages.create and messages.stream. The
// client reads its base URL and key from the environment (OPENAI_BASE_URL
// and OPENAI_API_KEY, or ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY). It asks
// the model for the task, runs each shell command the model calls for in
// WORKDIR, sends the whole history back with each request, alternately
// streamed and not, keeping every output item or content block as the
// client returned it (encrypted reasoning, signed thinking), until the model
// answers with text. Prints one JSON line of what it did; exits non-zero on
// any failure.
import { execSync } from 'node:child_process';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const task = 'Show me every part_NN.txt file in this directory, one at a time, then say you are done.';
const run = (command) => execSync(command, { cwd: process.env.WORKDIR, encoding: 'utf8' });
const report = { requests: 0, streamed: 0, rounds: 0, final: '' };

async function responses() {
  const client = new OpenAI({ maxRetries: 0, timeout: 60_000 });
  const tools = [{
    type: 'function', name: 'shell', description: 'Run a shell command.', strict: false,
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  }];
  const input = [{ role: 'user', content: [{ type: 'input_text', text: task }] }];
  for (let i = 0; i < 100; i++) {
    const params = {
      model: 'gpt-test', input, tools, tool_choice: 'auto', store: false,
      include: ['reasoning.encrypted_content'], temperature: 0.5, x_node_client: { request: i },
    };
    let output;
    report.requests++;
    if (i % 2 === 1) {
      report.streamed++;
      let deltas = '';
      const stream = await client.responses.create({ ...params, stream: true });
      for await (const event of stream) {
        if (event.type === 'response.output_text.delta') deltas += event.delta;
        if (event.type === 'response.completed') output = event.response.output;
      }
      if (!output) throw new Error(`request ${i}: the stream ended without response.completed`);
      const text = output.filter((o) => o.type === 'message').map((m) => m.content.map((c) => c.text).join('')).join('');
      if (deltas !== text) throw new Error(`request ${i}: deltas ${JSON.stringify(deltas)} != text ${JSON.stringify(text)}`);
    } else {
      output = (await client.responses.create(params)).output;
    }
    input.push(...output);
    const calls = output.filter((o) => o.type === 'function_call');
    if (calls.length === 0) {
      report.final = output.filter((o) => o.type === 'message').map((m) => m.content.map((c) => c.text).join('')).join('');
      return;
    }
    for (const call of calls) {
      input.push({ type: 'function_call_output', call_id: call.call_id, output: run(JSON.parse(call.arguments).command) });
      report.rounds++;
    }
  }
  throw new Error('no final answer after 100 requests');
}

async function messages() {
  const client = new Anthropic({ maxRetries: 0, timeout: 60_000 });
  const tools = [{
    name: 'bash', description: 'Run a shell command.',
    input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  }];
  const msgs = [{ role: 'user', content: task }];
  for (let i = 0; i < 100; i++) {
    const params = {
      model: 'claude-test', max_tokens: 4096, messages: msgs, tools,
      system: [{ type: 'text', text: 'You are a careful assistant.', cache_control: { type: 'ephemeral' } }],
      thinking: { type: 'enabled', budget_tokens: 2048 }, metadata: { user_id: 'node-client' },
    };
    let msg;
    report.requests++;
    if (i % 2 === 1) {
      report.streamed++;
      msg = await client.messages.stream(params).finalMessage();
    } else {
      msg = await client.messages.create(params);
    }
    msgs.push({ role: 'assistant', content: msg.content });
    const uses = msg.content.filter((b) => b.type === 'tool_use');
    if (uses.length === 0) {
      report.final = msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      return;
    }
    msgs.push({
      role: 'user',
      content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: run(u.input.command) })),
    });
    report.rounds += uses.length;
  }
  throw new Error('no final answer after 100 requests');
}

if (process.env.API === 'responses') await responses();
else if (process.env.API === 'messages') await messages();
else throw new Error(`API must be responses or messages, not ${JSON.stringify(process.env.API)}`);
console.log(JSON.stringify(report));
