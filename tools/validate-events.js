#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0
/*
 * Validates audit streams (JSON Lines) against schema/events.schema.json:
 * every line must be valid UTF-8, parse as JSON and match the schema.
 *
 *   tools/validate-events.js [--schema FILE] [--max N] FILE...
 *
 * Prints the first N failures (default 10) as FILE:LINE: why, then one
 * summary line per file; exits 1 on any failure, 2 on a usage or setup
 * error. Needs ajv and ajv-formats (tools/npm-deps.sh puts them in
 * build/npm; BPFBOX_NPM names another prefix).
 */
'use strict';

const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const root = path.resolve(__dirname, '..');
let schemaFile = path.join(root, 'schema', 'events.schema.json');
let max = 10;
const files = [];

function usage(msg) {
	if (msg)
		console.error(`validate-events: ${msg}`);
	console.error('usage: tools/validate-events.js [--schema FILE] [--max N] FILE...');
	process.exit(2);
}

const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
	if (args[i] === '--schema' && i + 1 < args.length)
		schemaFile = args[++i];
	else if (args[i] === '--max' && i + 1 < args.length)
		max = Number(args[++i]);
	else if (args[i].startsWith('--') && args[i] !== '--')
		usage(`unknown option ${args[i]}`);
	else
		files.push(args[i]);
}
if (!files.length || !(max >= 0))
	usage();

const prefix = process.env.BPFBOX_NPM || path.join(root, 'build', 'npm');
const req = createRequire(path.join(prefix, 'package.json'));
let Ajv2020, addFormats;
try {
	Ajv2020 = req('ajv/dist/2020').default;
	addFormats = req('ajv-formats').default;
} catch (e) {
	console.error(`validate-events: cannot load ajv from ${prefix}: run tools/npm-deps.sh (${e.code || e.message})`);
	process.exit(2);
}

const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false, discriminator: true });
addFormats(ajv, ['date-time', 'ipv4', 'ipv6']);
let validate;
try {
	validate = ajv.compile(JSON.parse(fs.readFileSync(schemaFile, 'utf8')));
} catch (e) {
	console.error(`validate-events: ${schemaFile}: ${e.message}`);
	process.exit(2);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
let shown = 0, failures = 0;

function failure(where, why) {
	failures++;
	if (shown++ < max)
		console.log(`${where}: ${why}`);
	else if (shown === max + 1)
		console.log('(more failures not shown)');
}

/* The most useful errors first: the deepest, and not the oneOf summaries. */
function explain(errors) {
	const seen = new Set();
	const lines = [];

	for (const e of errors.slice().sort((a, b) => b.instancePath.length - a.instancePath.length)) {
		if (e.keyword === 'oneOf' || e.keyword === 'if' || e.keyword === 'anyOf')
			continue;
		let msg = `${e.instancePath || '/'} ${e.message}`;
		if (e.keyword === 'additionalProperties')
			msg += ` (${e.params.additionalProperty})`;
		else if (e.keyword === 'const' || e.keyword === 'enum')
			msg += ` (${JSON.stringify(e.params.allowedValue ?? e.params.allowedValues)})`;
		if (!seen.has(msg)) {
			seen.add(msg);
			lines.push(msg);
		}
	}
	return (lines.length ? lines : errors.map((e) => `${e.instancePath || '/'} ${e.message}`))
		.slice(0, 4).join('; ');
}

for (const file of files) {
	let buf;
	try {
		buf = file === '-' ? fs.readFileSync(0) : fs.readFileSync(file);
	} catch (e) {
		failure(file, e.message);
		continue;
	}
	const before = failures;
	let n = 0, start = 0;
	const types = {};
	while (start < buf.length) {
		let end = buf.indexOf(0x0a, start);
		const where = `${file}:${++n}`;
		if (end < 0) {
			failure(where, 'no newline at the end of the last line (a cut stream)');
			end = buf.length;
		}
		const raw = buf.subarray(start, end);
		start = end + 1;
		let text, ev;
		try {
			text = utf8.decode(raw);
		} catch (e) {
			failure(where, 'not valid UTF-8');
			continue;
		}
		try {
			ev = JSON.parse(text);
		} catch (e) {
			failure(where, `not JSON: ${e.message}`);
			continue;
		}
		if (!validate(ev)) {
			const type = ev && typeof ev === 'object' ? ev.type : undefined;
			failure(where, `${JSON.stringify(type)}: ${explain(validate.errors)}`);
			continue;
		}
		types[ev.type] = (types[ev.type] || 0) + 1;
	}
	const summary = Object.entries(types).map(([t, c]) => `${t} ${c}`).join(', ');
	if (failures === before)
		console.log(`${file}: ${n} lines valid (${summary || 'empty'})`);
	else
		console.log(`${file}: ${failures - before} of ${n} lines invalid`);
}
process.exit(failures ? 1 : 0);
