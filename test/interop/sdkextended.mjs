// An A2A agent on the official JS SDK (@a2a-js/sdk, pinned in package.json) that serves an
// authenticated extended card, for carddrift's extended-card interop test
// (test/extended_interop_test.go). The public card (the SDK's agentCardHandler) declares
// capabilities.extendedAgentCard; the extended card adds the skill audit-ledger and is answered
// by the SDK's own handlers: JSON-RPC GetExtendedAgentCard (agent/getAuthenticatedExtendedCard for
// v0.3 clients, by A2A-Version) at /a2a/jsonrpc and GET /extendedAgentCard at /a2a/rest.
//
// The SDK itself refuses nothing: with a static extended card and an unauthenticated user it
// answers with the public card (DefaultRequestHandler.getAuthenticatedExtendedAgentCard). So an
// auth middleware in front answers 401 to a request without `Authorization: $TOKEN`, and the
// userBuilder marks a request with it authenticated.
//
//   TOKEN='Bearer …' node sdkextended.mjs        (env PORT, default 0 = random)
//
// First stdout line: {"port":N,"card":"http://127.0.0.1:N/.well-known/agent-card.json"}.
import http from 'node:http';
import express from 'express';
import { AGENT_CARD_PATH, A2A_PROTOCOL_VERSION, Role } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';

const token = process.env.TOKEN ?? '';
const port = Number(process.env.PORT ?? '0');
const skill = (id) => ({ id, name: id, description: 'd', tags: ['ledger'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] });
const base = (skills) => ({
  name: 'Ledger (a2a-js)', description: 'ledger agent', supportedInterfaces: [], version: '1.0.0',
  documentationUrl: '', iconUrl: '', provider: undefined,
  capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: true },
  securitySchemes: { bearer: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: '', scheme: 'Bearer', bearerFormat: '' } } } },
  securityRequirements: [{ schemes: { bearer: { list: [] } } }],
  defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills, signatures: [],
});
const card = base([skill('summarize')]);
const extended = base([skill('summarize'), skill('audit-ledger')]);

const executor = {
  async execute(ctx, bus) {
    bus.publish(AgentEvent.message({ messageId: crypto.randomUUID(), contextId: ctx.contextId, taskId: '', role: Role.ROLE_AGENT,
      parts: [{ content: { $case: 'text', value: 'noted' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      extensions: [], metadata: {}, referenceTaskIds: [] }));
    bus.finished();
  },
  async cancelTask(_taskId, bus) { bus.finished(); },
};
const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, undefined, undefined, undefined, extended);
const userBuilder = async (req) => ({ isAuthenticated: req.header('authorization') === token, userName: 'carddrift' });
const auth = (req, res, next) => {
  if (token === '' || req.header('authorization') !== token) {
    res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'unauthorized' });
    return;
  }
  next();
};
const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat: { enabled: true } }));
app.use('/a2a/jsonrpc', auth, jsonRpcHandler({ requestHandler, userBuilder, legacyCompat: { enabled: true } }));
app.use('/a2a/rest', auth, restHandler({ requestHandler, userBuilder, legacyCompat: { enabled: true } }));

const server = http.createServer(app);
server.on('error', (err) => { console.error(err); process.exit(1); });
server.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const ifaces = duplicateInterfacesForLegacy([
    { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    { url: `${url}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
  ], ['JSONRPC', 'HTTP+JSON']);
  card.supportedInterfaces = ifaces;
  extended.supportedInterfaces = ifaces;
  process.stdout.write(JSON.stringify({ port: server.address().port, card: `${url}/${AGENT_CARD_PATH}` }) + '\n');
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
