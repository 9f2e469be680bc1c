// Validate what sandgate returns against OpenAI's published OpenAPI spec.
import Ajv from "ajv";
import addFormats from "ajv-formats";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
// Vendored with its licence in tests/vendor/openai-openapi: a clone alone
// runs every test.
const specPath = process.env.SG_OPENAPI ||
  path.join(here, "../vendor/openai-openapi/openapi.json");

const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
// OpenAPI 3.0's `nullable: true` becomes anyOf [schema, null]: ajv cannot
// apply nullable beside $ref or enum.
(function fix(n) {
  if (Array.isArray(n)) return n.forEach(fix);
  if (!n || typeof n !== "object") return;
  for (const k of Object.keys(n)) fix(n[k]);
  if (n.nullable === true) {
    const rest = { ...n };
    delete rest.nullable;
    for (const k of Object.keys(n)) delete n[k];
    n.anyOf = [rest, { type: "null" }];
  }
})(spec);
// Where the vendored spec and OpenAI's captured wire disagree, the wire
// wins: its response.created and response.in_progress snapshots say
// "usage": null and "user": null (the recorded streams the reference's
// §5.4 transcript copies), where the spec types both as non-nullable.
const WIRE_NULLABLE = [["Response", "usage"], ["ModelResponseProperties", "user"]];
for (const [name, prop] of WIRE_NULLABLE) {
  const props = [spec.components.schemas[name], ...(spec.components.schemas[name].allOf ?? [])]
    .map((s) => s.properties).find((p) => p?.[prop]);
  if (!props) throw new Error(`schema.mjs: the spec's ${name} has no ${prop} any more`);
  props[prop] = { anyOf: [props[prop], { type: "null" }] };
}
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addFormat("unixtime", true);
ajv.addSchema(spec, "openapi");

// Throws with the validator's errors when obj does not match the schema.
export function validate(name, obj) {
  const v = ajv.getSchema("openapi#/components/schemas/" + name);
  if (!v) throw new Error("no schema " + name);
  if (!v(obj)) {
    throw new Error(`${name} mismatch: ${JSON.stringify(v.errors.slice(0, 5))}\n` +
      JSON.stringify(obj).slice(0, 600));
  }
}
