// The contract's JSON Schemas (schemas/*.json in the repository), compiled with ajv.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { repoRoot } from './harness.js';

const Ajv2020 = createRequire(import.meta.url)('ajv/dist/2020').default;

export const schemaDir = join(repoRoot, 'schemas');

/** schemas: every schema by event type ("card.drift"), parsed. */
export const schemas: Record<string, any> = Object.fromEntries(
  readdirSync(schemaDir).filter((f) => f.endsWith('.v1.json')).map((f) => [f.replace(/\.v1\.json$/, ''), JSON.parse(readFileSync(join(schemaDir, f), 'utf8'))]),
);

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat('uri', (s: string) => URL.canParse(s));
ajv.addFormat('date-time', (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s) && !isNaN(Date.parse(s)));
for (const s of Object.values(schemas)) ajv.addSchema(s);

/** validate throws unless data conforms to the schema of type. */
export function validate(type: string, data: unknown): void {
  const v = ajv.getSchema(schemas[type].$id);
  if (!v(data)) throw new Error(`${type}: ${ajv.errorsText(v.errors)} in ${JSON.stringify(data)}`);
}
