// A real client's view of the module: every BF and CF call of node-redis's
// @redis/bloom (v4: `commandOptions`; v5: `RESP_TYPES`, RESP2 or RESP3),
// as its documentation shows them, against one server. Prints one JSON line
// per call: its name and what the client handed back (its parsed reply, or
// the error's text). bench/redis_node.sh runs it against RedisBloom and
// bloomkit and compares the lines.
//   node bench/redis_node_client.js PORT [RESP]    (NODE_PATH: the client)
'use strict';
const redis = require('redis');

const port = process.argv[2];
const resp = Number(process.argv[3] || 2);
const v5 = redis.RESP_TYPES !== undefined;

function client() {
    const url = `redis://127.0.0.1:${port}`;
    return v5 ? redis.createClient({ url, RESP: resp, unstableResp3: true })
              : redis.createClient({ url });
}

// SCANDUMP with the chunk as bytes (each major version has its own way)
function scanDump(c, family, key, it) {
    if (v5)
        return c.withTypeMapping({ [redis.RESP_TYPES.BLOB_STRING]: Buffer })[family].scanDump(key, it);
    return c[family].scanDump(redis.commandOptions({ returnBuffers: true }), key, it);
}

async function main() {
    const c = client();
    c.on('error', e => console.log(JSON.stringify(['client error', e.message])));
    await c.connect();
    await c.flushAll();
    const out = [];
    const rec = async (name, f) => {
        try {
            out.push([name, await f()]);
        } catch (e) {
            out.push([name, 'ERR:' + e.message]);
        }
    };
    // a whole dump moved into another key, chunk by chunk
    const copy = async (family, from, to) => {
        const chunks = [];
        for (let it = 0;;) {
            const r = await scanDump(c, family, from, it);
            it = Number(r.iterator);
            if (it === 0)
                break;
            chunks.push([it, r.chunk]);
        }
        for (const [it, chunk] of chunks)
            await c[family].loadChunk(to, it, chunk);
        return chunks.length;
    };
    const many = (prefix, n) => Array.from({ length: n }, (_, i) => prefix + i);

    await rec('bf.reserve', () => c.bf.reserve('b', 0.01, 1000));
    await rec('bf.reserve expansion', () => c.bf.reserve('b2', 0.001, 100, { EXPANSION: 4 }));
    await rec('bf.reserve nonscaling', () => c.bf.reserve('b3', 0.01, 100, { NONSCALING: true }));
    await rec('bf.reserve existing', () => c.bf.reserve('b', 0.01, 1000));
    await rec('bf.add', () => c.bf.add('b', 'x'));
    await rec('bf.add again', () => c.bf.add('b', 'x'));
    await rec('bf.mAdd', () => c.bf.mAdd('b', ['a', 'b', 'x']));
    await rec('bf.exists', () => c.bf.exists('b', 'a'));
    await rec('bf.exists absent', () => c.bf.exists('b', 'zzz'));
    await rec('bf.exists no key', () => c.bf.exists('nokey', 'zzz'));
    await rec('bf.mExists', () => c.bf.mExists('b', ['a', 'q', 'x']));
    await rec('bf.card', () => c.bf.card('b'));
    await rec('bf.card no key', () => c.bf.card('nokey'));
    await rec('bf.info', () => c.bf.info('b'));
    await rec('bf.info expansion', () => c.bf.info('b2'));
    await rec('bf.info no key', () => c.bf.info('nokey'));
    await rec('bf.insert', () => c.bf.insert('bi', ['p', 'q'], { CAPACITY: 500, ERROR: 0.02, EXPANSION: 3 }));
    await rec('bf.insert NOCREATE', () => c.bf.insert('bn', ['p'], { NOCREATE: true }));
    await rec('bf.insert NONSCALING', () => c.bf.insert('bs', ['p'], { NONSCALING: true }));
    await rec('bf.info inserted', () => c.bf.info('bi'));
    await rec('bf.add new key', () => c.bf.add('bnew', 'x'));
    await rec('bf.info new key', () => c.bf.info('bnew'));
    await rec('bf.scanDump + loadChunk', () => copy('bf', 'b', 'bcopy'));
    await rec('bf.mExists copy', () => c.bf.mExists('bcopy', ['a', 'b', 'x', 'zz']));
    await rec('bf.info copy', () => c.bf.info('bcopy'));
    await rec('bf.add wrong type', async () => {
        await c.set('s', 'v');
        return c.bf.add('s', 'x');
    });
    await rec('bf.mAdd growing: new', async () => (await c.bf.mAdd('bg', many('g', 3000))).filter(Boolean).length);
    await rec('bf.info grown', () => c.bf.info('bg'));
    await rec('bf.mExists grown: all there', async () => (await c.bf.mExists('bg', many('g', 3000))).every(Boolean));
    await rec('bf.mAdd past a NONSCALING capacity', async () => (await c.bf.mAdd('b3', many('g', 300))).length);

    await rec('cf.reserve', () => c.cf.reserve('c', 1000));
    await rec('cf.reserve options', () => c.cf.reserve('c2', 1000, { BUCKETSIZE: 4, MAXITERATIONS: 20, EXPANSION: 2 }));
    await rec('cf.reserve existing', () => c.cf.reserve('c', 1000));
    await rec('cf.add', () => c.cf.add('c', 'x'));
    await rec('cf.add again', () => c.cf.add('c', 'x'));
    await rec('cf.addNX', () => c.cf.addNX('c', 'x'));
    await rec('cf.addNX new', () => c.cf.addNX('c', 'y'));
    await rec('cf.insert', () => c.cf.insert('ci', ['a', 'b'], { CAPACITY: 500 }));
    await rec('cf.insert NOCREATE', () => c.cf.insert('cn', ['a'], { NOCREATE: true }));
    await rec('cf.insertNX', () => c.cf.insertNX('ci', ['a', 'z']));
    await rec('cf.exists', () => c.cf.exists('c', 'x'));
    await rec('cf.exists absent', () => c.cf.exists('c', 'nope'));
    await rec('cf.exists no key', () => c.cf.exists('nokey2', 'nope'));
    await rec('cf.count', () => c.cf.count('c', 'x'));
    await rec('cf.del', () => c.cf.del('c', 'x'));
    await rec('cf.del absent', () => c.cf.del('c', 'nope'));
    await rec('cf.del no key', () => c.cf.del('nokey3', 'nope'));
    await rec('cf.info', () => c.cf.info('c'));
    await rec('cf.info options', () => c.cf.info('c2'));
    await rec('cf.info inserted', () => c.cf.info('ci'));
    await rec('cf.scanDump + loadChunk', () => copy('cf', 'c', 'ccopy'));
    await rec('cf.exists copy', async () => [await c.cf.exists('ccopy', 'y'), await c.cf.exists('ccopy', 'x')]);
    await rec('cf.info copy', () => c.cf.info('ccopy'));
    await rec('cf.add growing: new', async () => {
        let n = 0;
        for (const k of many('g', 3000))
            n += (await c.cf.add('cg', k)) ? 1 : 0;
        return n;
    });
    await rec('cf.info grown', () => c.cf.info('cg'));

    // Maps (RESP3) as objects, 64-bit integers as text: one stable line each
    const plain = (k, v) => (v instanceof Map ? Object.fromEntries(v) : typeof v === 'bigint' ? String(v) : v);
    for (const row of out)
        console.log(JSON.stringify(row, plain));
    await c.quit();
}

main().catch(e => {
    console.log(JSON.stringify(['FATAL', String(e && e.stack)]));
    process.exit(1);
});
