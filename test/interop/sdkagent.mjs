// An A2A agent built on the official JS SDK (@a2a-js/sdk, pinned in package.json), for
// carddrift's interop tests (test/interop_test.go). Its agent card is served by the SDK's own
// agentCardHandler with the v0.3 compatibility layer on, so the SDK itself picks the form:
// the v1.0 card to clients sending `A2A-Version: 1.0`, a v0.3-shaped card to the others.
//
//   node sdkagent.mjs [--port N] [--max-age S]     (env PORT, MAX_AGE; port 0 = random)
//
// First stdout line: {"port":N,"card":"http://127.0.0.1:N/.well-known/agent-card.json"}.
// POST /control {"streaming":false,"pushNotifications":true,"version":"1.4.1","removeSkill":"id",
// "description":"…"} changes the card in place (the card object the request handler serves) and
// answers with it. A change to a signed card leaves its signatures as they were: the card is then
// tampered with (changed after signing).
//
// Signing, with the SDK's own generateAgentCardSignature:
//   {"sign":{"kid":"k1","alg":"ES256","jku":true}}  signs the card (after this request's other
//       changes) with key kid, replacing its signatures; the key is generated on first use and
//       published at GET /jwks.json (Cache-Control: no-cache); jku (default true) names that URL
//       in the protected header.
//   {"addKey":{"kid":"k2","alg":"ES256"}}  publishes a key without signing (the next key of a
//       rotation: a verifier that fetched the set before the rotation finds it).
//   {"unsign":true}                       removes the card's signatures.
// The answer is the card; GET /jwks.json is the key set.
import http from 'node:http';
import express from 'express';
import * as jose from 'jose';
import { AGENT_CARD_PATH, A2A_PROTOCOL_VERSION, TaskState, Role, generateAgentCardSignature } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';

function arg(name, env, def) {
  const i = process.argv.indexOf(name);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  return process.env[env] ?? def;
}
const port = Number(arg('--port', 'PORT', '0'));
const maxAge = Number(arg('--max-age', 'MAX_AGE', '3600')); // the SDK's own default is 3600

// The card, as an SDK user writes it: the SDK's (ts-proto) AgentCard type. Interface URLs are
// filled in once the port is known.
const card = {
  name: 'Ledger Clerk',
  description: 'Summarises and extracts line items from invoices and statements.',
  supportedInterfaces: [],
  provider: { organization: 'Carddrift Interop', url: 'https://example.com/carddrift-interop' },
  version: '1.4.0',
  documentationUrl: 'https://example.com/carddrift-interop/docs',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {
    bearer: {
      scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'JWT from the tenant IdP', scheme: 'Bearer', bearerFormat: 'JWT' } },
    },
    oauth: {
      scheme: {
        $case: 'oauth2SecurityScheme',
        value: {
          description: 'Machine clients',
          oauth2MetadataUrl: '',
          flows: {
            flow: {
              $case: 'clientCredentials',
              value: {
                tokenUrl: 'https://auth.example.com/oauth/token',
                refreshUrl: '',
                scopes: { 'invoices:read': 'Read invoices', 'invoices:write': 'Annotate invoices' },
              },
            },
          },
        },
      },
    },
  },
  securityRequirements: [{ schemes: { bearer: { list: [] } } }, { schemes: { oauth: { list: ['invoices:read'] } } }],
  defaultInputModes: ['text/plain', 'application/pdf'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [
    {
      id: 'summarize-invoice',
      name: 'Summarise invoice',
      description: 'A short summary of an invoice: supplier, totals, due date.',
      tags: ['invoice', 'summary'],
      examples: ['Summarise the attached invoice'],
      inputModes: ['application/pdf', 'text/plain'],
      outputModes: ['text/plain', 'text/markdown'],
      securityRequirements: [],
    },
    {
      id: 'extract-line-items',
      name: 'Extract line items',
      description: 'Line items of an invoice or statement as JSON rows.',
      tags: ['invoice', 'extraction'],
      examples: [],
      inputModes: ['application/pdf', 'image/png'],
      outputModes: ['application/json'],
      securityRequirements: [{ schemes: { oauth: { list: ['invoices:read', 'invoices:write'] } } }],
    },
  ],
  signatures: [],
  iconUrl: '',
};

// A trivial executor: one agent message per request.
const executor = {
  async execute(ctx, bus) {
    bus.publish(AgentEvent.message({
      messageId: crypto.randomUUID(), contextId: ctx.contextId, taskId: '', role: Role.ROLE_AGENT,
      parts: [{ content: { $case: 'text', value: 'noted' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      extensions: [], metadata: {}, referenceTaskIds: [],
    }));
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: '', status: { state: TaskState.TASK_STATE_CANCELED, timestamp: new Date().toISOString(), message: undefined }, metadata: undefined }));
    bus.finished();
  },
};

const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, cache: { maxAge }, legacyCompat: { enabled: true } }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
// The agent's signing keys by kid ({alg, privateKey, jwk}), all published in the key set.
const keys = new Map();
async function key(kid, alg) {
  if (!keys.has(kid)) {
    const { publicKey, privateKey } = await jose.generateKeyPair(alg, { extractable: true });
    const jwk = { ...(await jose.exportJWK(publicKey)), kid, alg, use: 'sig' };
    keys.set(kid, { alg, privateKey, jwk });
  }
  return keys.get(kid);
}
let base = '';
app.get('/jwks.json', (req, res) => {
  res.set('Cache-Control', 'no-cache');
  res.type('application/jwk-set+json').send(JSON.stringify({ keys: [...keys.values()].map((k) => k.jwk) }));
});
app.post('/control', express.json(), async (req, res) => {
  const c = req.body ?? {};
  if (typeof c.streaming === 'boolean') card.capabilities.streaming = c.streaming;
  if (typeof c.pushNotifications === 'boolean') card.capabilities.pushNotifications = c.pushNotifications;
  if (typeof c.version === 'string') card.version = c.version;
  if (typeof c.description === 'string') card.description = c.description;
  if (typeof c.removeSkill === 'string') card.skills = card.skills.filter((s) => s.id !== c.removeSkill);
  if (c.addKey) await key(c.addKey.kid, c.addKey.alg ?? 'ES256');
  if (c.unsign) card.signatures = [];
  if (c.sign) {
    const alg = c.sign.alg ?? 'ES256';
    const k = await key(c.sign.kid, alg);
    const header = { alg, typ: 'JOSE', kid: c.sign.kid };
    if (c.sign.jku !== false) header.jku = `${base}/jwks.json`;
    const signed = await generateAgentCardSignature(k.privateKey, header)({ ...card, signatures: [] });
    card.signatures = signed.signatures;
  }
  res.json(card);
});

const server = http.createServer(app);
server.on('error', (err) => { console.error(err); process.exit(1); });
server.listen(port, '127.0.0.1', () => {
  base = `http://127.0.0.1:${server.address().port}`;
  card.supportedInterfaces = duplicateInterfacesForLegacy([
    { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
  ], ['JSONRPC', 'HTTP+JSON']);
  process.stdout.write(JSON.stringify({ port: server.address().port, card: `${base}/${AGENT_CARD_PATH}` }) + '\n');
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
