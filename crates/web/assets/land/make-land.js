#!/usr/bin/env node
// Makes land-50m.bin, the workbench's coastline, from Natural Earth's 1:50m land as the npm
// package world-atlas@2.0.2 ships it (land-50m.json, TopoJSON; Natural Earth is public domain,
// see NOTICE.md beside this file).
//
//   npm pack world-atlas@2.0.2 && tar xzf world-atlas-2.0.2.tgz
//   node crates/web/assets/land/make-land.js package/land-50m.json crates/web/assets/land/land-50m.bin
//
// Why a converted file and not the TopoJSON with a decoder: the page is plain JavaScript with no
// libraries, and the map needs only the land's rings. This script joins TopoJSON's arcs into
// rings once, here, and writes them in a form the page reads with two typed-array views and one
// running sum: 248 KiB instead of 533 KiB of JSON, and no TopoJSON decoder (topojson-client) to
// vendor. The grid is world-atlas's own quantisation (0.0036° × 0.0017°, about 250 × 190 m), so
// no point moves.
//
// Format (little-endian):
//   0   8 bytes  "TGLAND01"
//   8   u32      ring count R
//   12  u32      point count P (all rings)
//   16  f64 × 4  scale x, scale y, translate x, translate y: lon = x * sx + tx, lat = y * sy + ty
//   48  R × (u32 count, i32 x0, i32 y0)   each ring: its points and its first point on the grid
//   …   (P − R) × (i16 dx, i16 dy)        the other points of each ring, in order, as steps
// A step too long for 16 bits is cut into shorter ones along the same line (extra points on it).
// A ring that crosses the antimeridian (Eurasia through Chukotka, Antarctica) has a step of
// nearly 360° of longitude there; drawn flat it would be a band round the world, so the ring is
// led round the map's edge instead: up (or down) the edge to the pole and along it to the other
// edge. The two crossings' detours cancel, leaving each side closed along its edge.
'use strict';

const fs = require('node:fs');

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: make-land.js land-50m.json land-50m.bin');
  process.exit(2);
}
const topo = JSON.parse(fs.readFileSync(input, 'utf8'));
const { scale, translate } = topo.transform;

// Arcs as absolute grid points (TopoJSON stores each arc's points as steps from the previous).
const arcs = topo.arcs.map((arc) => {
  let x = 0, y = 0;
  return arc.map(([dx, dy]) => [(x += dx), (y += dy)]);
});

function ringOf(indexes) {
  const out = [];
  for (const i of indexes) {
    const arc = i >= 0 ? arcs[i] : arcs[~i].slice().reverse();
    // consecutive arcs share their joining point
    for (let k = out.length ? 1 : 0; k < arc.length; k++) out.push(arc[k]);
  }
  return out;
}

// Grid coordinates of the map's edges and poles.
const WEST = Math.round((-180 - translate[0]) / scale[0]);
const EAST = Math.round((180 - translate[0]) / scale[0]);
const NORTH = Math.round((90 - translate[1]) / scale[1]);
const SOUTH = Math.round((-90 - translate[1]) / scale[1]);
const HALF = Math.round(180 / scale[0]);

function aroundTheEdge(ring) {
  const out = [ring[0]];
  for (let k = 1; k < ring.length; k++) {
    const [px, py] = ring[k - 1];
    const [x, y] = ring[k];
    if (Math.abs(x - px) > HALF) {
      const pole = (py + y) / 2 > (NORTH + SOUTH) / 2 ? NORTH : SOUTH;
      const from = x < px ? EAST : WEST, to = x < px ? WEST : EAST;
      out.push([from, py], [from, pole], [to, pole], [to, y]);
    }
    out.push([x, y]);
  }
  return out;
}

const rings = [];
function collect(g) {
  if (g.type === 'GeometryCollection') for (const x of g.geometries) collect(x);
  else if (g.type === 'Polygon') for (const r of g.arcs) rings.push(aroundTheEdge(ringOf(r)));
  else if (g.type === 'MultiPolygon') for (const p of g.arcs) for (const r of p) rings.push(aroundTheEdge(ringOf(r)));
}
collect(topo.objects.land);

// Steps that fit in 16 bits.
const LIMIT = 32767;
const table = [];
const steps = [];
let points = 0;
for (const ring of rings) {
  if (ring.length < 3) continue;
  let count = 1;
  let [px, py] = ring[0];
  for (let k = 1; k < ring.length; k++) {
    const [x, y] = ring[k];
    const n = Math.max(1, Math.ceil(Math.max(Math.abs(x - px), Math.abs(y - py)) / LIMIT));
    let qx = px, qy = py;
    for (let j = 1; j <= n; j++) {
      const nx = px + Math.round(((x - px) * j) / n), ny = py + Math.round(((y - py) * j) / n);
      steps.push(nx - qx, ny - qy);
      qx = nx;
      qy = ny;
      count++;
    }
    px = x;
    py = y;
  }
  table.push([count, ring[0][0], ring[0][1]]);
  points += count;
}

const buf = Buffer.alloc(48 + table.length * 12 + steps.length * 2);
buf.write('TGLAND01', 0, 'latin1');
buf.writeUInt32LE(table.length, 8);
buf.writeUInt32LE(points, 12);
buf.writeDoubleLE(scale[0], 16);
buf.writeDoubleLE(scale[1], 24);
buf.writeDoubleLE(translate[0], 32);
buf.writeDoubleLE(translate[1], 40);
let o = 48;
for (const [count, x0, y0] of table) {
  buf.writeUInt32LE(count, o);
  buf.writeInt32LE(x0, o + 4);
  buf.writeInt32LE(y0, o + 8);
  o += 12;
}
for (const s of steps) {
  buf.writeInt16LE(s, o);
  o += 2;
}
fs.writeFileSync(output, buf);
console.log(`${output}: ${table.length} rings, ${points} points, ${buf.length} bytes`);
