// Replays the first MESSAGES messages of the transcript TRANSCRIPT with the
// official openai npm client against OPENAI_BASE_URL (abridge serve), as
// an app keeping its full history would: one request before each assistant
// message, alternately streamed and not, with tools, tool_choice, a
// temperature and a field the client does not know. Then sends one request
// with a broken history and checks that it fails with abridge's 400. Prints
// one JSON line of what it did; exits non-zero on any failure.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

const path = process.env.TRANSCRIPT;
const limit = Number(process.env.MESSAGES || '120');
const data = JSON.parse(readFileSync(path, 'utf8'));
const all = Array.isArray(data) ? data : data.messages;
const msgs = all.slice(0, limit);

// The same requests as openaitest.RequestLengths.
const lengths = [];
let prev = '';
msgs.forEach((m, i) => {
  if (m.role === 'assistant' && i > 0 && prev !== 'assistant') lengths.push(i);
  if (i === msgs.length - 1 && m.role !== 'assistant') lengths.push(msgs.length);
  prev = m.role;
});

const client = new OpenAI({ maxRetries: 0, timeout: 60_000 });
const tools = [{
  type: 'function',
  function: { name: 'bash', description: 'Run a shell command.', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
}];

let streamed = 0;
for (const [i, n] of lengths.entries()) {
  const params = {
    model: 'gpt-test',
    messages: msgs.slice(0, n),
    tools,
    tool_choice: 'auto',
    temperature: 0.5,
    x_node_client: { request: i, tags: ['a', 'b'] },
  };
  let text = '';
  if (i % 2 === 1) {
    const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    let usage = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    if (!usage) throw new Error(`request ${i}: stream without usage`);
    streamed++;
  } else {
    const resp = await client.chat.completions.create(params);
    text = resp.choices[0].message.content;
  }
  if (text !== 'ok') throw new Error(`request ${i} (${n} messages): answer ${JSON.stringify(text)}`);
}

let rejected = null;
try {
  await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'tool', tool_call_id: 'call_9', content: 'x' }] });
} catch (err) {
  if (!(err instanceof OpenAI.BadRequestError)) throw err;
  rejected = { status: err.status, code: err.code, message: err.message };
}
if (!rejected) throw new Error('a broken history was accepted');

console.log(JSON.stringify({ requests: lengths.length, streamed, rejected }));
