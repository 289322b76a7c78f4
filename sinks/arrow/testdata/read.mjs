// Reads Arrow IPC files with the apache-arrow npm package, an Arrow
// implementation independent of arrow-go, and prints them as JSON:
//
//   node read.mjs NODE_MODULES FILE...
//
// {"files": [{"path", "metadata": {...}, "batches": n,
//   "fields": [{"name", "type", "nullable"}], "rows": [{column: value}]}]}
//
// Values: strings as strings; 64-bit integers and timestamps (the raw
// count of the type's unit since the epoch) as decimal strings (JSON
// numbers would round them); doubles as numbers, -0 as the string "-0"
// (JSON has no -0); booleans; NULL as null; lists as arrays; maps as
// objects, with "__order" listing their keys in stored order.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [nodeModules, ...files] = process.argv.slice(2);
// createRequire resolves from NODE_MODULES' parent, then NODE_PATH.
const require = createRequire(path.join(path.dirname(path.resolve(nodeModules)), "noop.js"));
const arrow = require("apache-arrow");
const { Type } = arrow;

function num(v) {
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : v;
  return v;
}

// raw64 returns the i-th 64-bit value of a chunk of a 64-bit column.
function raw64(data, i) {
  const vals = data.values;
  if (vals instanceof BigInt64Array) return vals[i].toString();
  if (vals instanceof Int32Array) { // older layouts: pairs of 32-bit words
    const lo = BigInt(vals[2 * i] >>> 0), hi = BigInt(vals[2 * i + 1]);
    return ((hi << 32n) | lo).toString();
  }
  throw new Error("unexpected 64-bit storage " + vals.constructor.name);
}

// value converts the i-th value of one chunk (Data) of a column.
function value(data, i) {
  if (data.nullable && !data.getValid(i)) return null;
  const t = data.type;
  switch (t.typeId) {
    case Type.Utf8:
      return new arrow.Vector([data]).get(i);
    case Type.Int:
      if (t.bitWidth !== 64) throw new Error("unexpected int width " + t.bitWidth);
      return raw64(data, i);
    case Type.Timestamp:
      return raw64(data, i);
    case Type.Float:
      return num(new arrow.Vector([data]).get(i));
    case Type.Bool:
      return new arrow.Vector([data]).get(i);
    case Type.List: {
      const child = data.children[0];
      const out = [];
      for (let j = data.valueOffsets[i]; j < data.valueOffsets[i + 1]; j++) out.push(value(child, j));
      return out;
    }
    case Type.Map: {
      const entries = data.children[0]; // struct<key, value>
      const [keys, vals] = entries.children;
      const out = {}, order = [];
      for (let j = data.valueOffsets[i]; j < data.valueOffsets[i + 1]; j++) {
        const k = value(keys, j);
        order.push(k);
        out[k] = value(vals, j);
      }
      out.__order = order;
      return out;
    }
  }
  throw new Error("unexpected type " + String(t));
}

// The package's exports hide package.json: read it beside the entry point.
const pkg = JSON.parse(readFileSync(path.join(path.dirname(require.resolve("apache-arrow")), "package.json"), "utf8"));
const out = { arrow: pkg.version, module: path.dirname(require.resolve("apache-arrow")), files: [] };
for (const file of files) {
  const table = arrow.tableFromIPC(readFileSync(file));
  const rows = Array.from({ length: table.numRows }, () => ({}));
  for (const field of table.schema.fields) {
    const col = table.getChild(field.name);
    let r = 0;
    for (const data of col.data) {
      // Data.offset is applied by the accessors below except for raw
      // buffers; IPC-read chunks start at offset 0.
      if (data.offset !== 0) throw new Error("chunk with an offset");
      for (let i = 0; i < data.length; i++) rows[r++][field.name] = value(data, i);
    }
  }
  out.files.push({
    path: file,
    metadata: Object.fromEntries(table.schema.metadata),
    batches: table.batches.length,
    fields: table.schema.fields.map((f) => ({ name: f.name, type: String(f.type), nullable: f.nullable })),
    rows,
  });
}
process.stdout.write(JSON.stringify(out));
