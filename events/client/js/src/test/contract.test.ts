// The package's types against the contract: every shape and enumeration
// against schemas/*.json, and the Go side's drift events against the types.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { agentHost, enums, shapes, token, type Drift } from '../index.js';
import { schemaDir, schemas, validate } from './schemas.js';

// schemaObject finds the object schema a shape names: "<type>", "<type>#<$defs name or property>".
function schemaObject(name: string): any {
  const [type, part] = name.split('#');
  const s = schemas[type];
  return part ? s.$defs?.[part] ?? s.properties[part] : s;
}

test('every shape has the members of its schema object, required as the schema requires', () => {
  for (const [name, shape] of Object.entries(shapes)) {
    const obj = schemaObject(name);
    assert.ok(obj?.properties, `${name}: no such object in the schemas`);
    assert.equal(obj.additionalProperties, false, `${name}: the schema is open`);
    assert.deepEqual(Object.keys(shape).sort(), Object.keys(obj.properties).sort(), `${name}: members`);
    const required = Object.entries(shape).filter(([, v]) => v === 'required').map(([k]) => k).sort();
    assert.deepEqual(required, [...(obj.required ?? [])].sort(), `${name}: required members`);
  }
});

test('every enumeration of the types is the schema\'s', () => {
  for (const [name, values] of Object.entries(enums)) {
    const [obj, member] = name.split(/\.(?=[^.]*$)/);
    assert.deepEqual([...values].sort(), [...schemaObject(obj).properties[member].enum].sort(), name);
  }
});

// members checks that every member of v is one its shape names, recursively.
function members(v: any, shape: keyof typeof shapes, where: string): void {
  for (const k of Object.keys(v)) assert.ok(k in shapes[shape], `${where}.${k} is not in ${shape}`);
}

test('the Go side\'s card.drift examples validate and parse with the types', () => {
  const dir = join(schemaDir, 'testdata', 'card.drift', 'valid');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  assert.ok(files.length > 0);
  for (const f of files) {
    const d: Drift = JSON.parse(readFileSync(join(dir, f), 'utf8'));
    validate('card.drift', d);
    members(d, 'card.drift', f);
    members(d.verdict, 'card.drift#verdict', f);
    members(d.trigger, 'card.drift#trigger', f);
    for (const ref of [d.pinned, d.live]) {
      members(ref, 'card.drift#cardRef', f);
      if (ref.signer) members(ref.signer, 'card.drift#signer', f);
    }
    for (const x of d.findings) members(x, 'card.drift#finding', f);
  }
});

test('subject tokens and agent hosts are the Go ones (events/token_test.go)', () => {
  const tokens: [string, string][] = [['task-1', 'task-1'], ['Task_ID-9', 'Task_ID-9'], ['', '='], ['=', '=3D'], ['a.b', 'a=2Eb'],
    ['*', '=2A'], ['>', '=3E'], ['a b', 'a=20b'], ['é', '=C3=A9'], ['\x00', '=00'], ['a=2E', 'a=3D2E'], ['agent.example:8443', 'agent=2Eexample=3A8443']];
  for (const [id, want] of tokens) assert.equal(token(id), want, JSON.stringify(id));
  const hosts: [string, string][] = [['https://agent.example', 'agent.example'], ['https://Agent.EXAMPLE/a2a/v1?x=1', 'agent.example'],
    ['https://agent.example:443/', 'agent.example'], ['http://agent.example:80', 'agent.example'], ['http://agent.example:443', 'agent.example:443'],
    ['https://agent.example.:8443', 'agent.example:8443'], ['HTTPS://user:pw@agent.example', 'agent.example'], ['https://[::1]:8443/', '[::1]:8443'],
    ['https://[::1]', '[::1]'], ['http://10.0.0.7:9000', '10.0.0.7:9000']];
  for (const [url, want] of hosts) assert.equal(agentHost(url), want, url);
  for (const bad of ['', 'agent.example', 'ftp://agent.example', 'https://']) assert.throws(() => agentHost(bad), bad);
});
