/**
 * Writes docs/openapi.json, the agent API's OpenAPI 3.1 document generated from lib/api's zod
 * schemas (`npm run openapi`). `lib/api/openapi.test.ts` fails when the checked-in file differs
 * from what lib/api builds, so run this after changing the contract.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument, serializeOpenApiDocument } from '../lib/api/openapi.ts';

const target = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));
writeFileSync(target, serializeOpenApiDocument(buildOpenApiDocument()));
process.stdout.write(`wrote docs/openapi.json\n`);
