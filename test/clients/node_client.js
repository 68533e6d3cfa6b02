// Drive search_engine's HTTP endpoint with the official Node.js client
// @elastic/elasticsearch 8.x (pinned in package-lock.json), unchanged, as
// TAP test 331 asks: helpers.bulk against a tiny write queue (its own 429
// retry), helpers.scrollSearch / scrollDocuments, msearch.
//
// Prints one "name value" line per figure the Perl test checks; a client
// error exits non-zero with the error on stderr.
//
// usage: node node_client.js URL DOCS
'use strict'
const { Client } = require('@elastic/elasticsearch')

const [url, ndocsArg] = process.argv.slice(2)
const ndocs = parseInt(ndocsArg, 10)
const client = new Client({ node: url, requestTimeout: 120000, maxRetries: 0 })
const say = (name, value) => console.log(`${name} ${value}`)

async function main () {
  const info = await client.info()
  say('version', info.version.number)

  await client.indices.create({
    index: 'nd',
    settings: { number_of_shards: 8, number_of_replicas: 0 },
    mappings: { properties: { n: { type: 'long' }, tag: { type: 'keyword' }, title: { type: 'text' } } }
  })

  let dropped = 0
  const docs = []
  for (let i = 0; i < ndocs; i++) docs.push({ id: `d-${i}`, n: i, tag: i % 2 ? 'odd' : 'even', title: `node document ${i}` })
  const stats = await client.helpers.bulk({
    datasource: docs,
    onDocument (doc) { return { index: { _index: 'nd', _id: doc.id } } },
    onDrop () { dropped++ },
    flushBytes: 20000,
    concurrency: 4,
    retries: 20,
    wait: 50
  })
  say('bulk_total', stats.total)
  say('bulk_successful', stats.successful)
  say('bulk_failed', stats.failed)
  say('bulk_retried', stats.retry > 0 ? 1 : 0)
  say('bulk_dropped', dropped)

  await client.indices.refresh({ index: 'nd' })
  const c = await client.count({ index: 'nd' })
  say('count', c.count)

  // scrollSearch: pages until the end, then the helper clears the scroll
  const seen = new Set()
  let pages = 0
  for await (const result of client.helpers.scrollSearch({
    index: 'nd', scroll: '1m', size: 250, query: { term: { tag: 'odd' } }
  })) {
    pages++
    for (const hit of result.body.hits.hits) seen.add(hit._id)
  }
  say('scroll_docs', seen.size)
  say('scroll_pages', pages)

  let ndoc = 0
  for await (const doc of client.helpers.scrollDocuments({
    index: 'nd', scroll: '1m', size: 500, query: { term: { tag: 'even' } }
  })) {
    if (doc.tag === 'even') ndoc++
  }
  say('scroll_documents', ndoc)

  const ms = await client.msearch({
    searches: [
      { index: 'nd' }, { query: { term: { tag: 'odd' } }, size: 0 },
      { index: 'nd' }, { query: { match: { title: 'document 42' } }, size: 1 },
      { index: 'missing-index' }, { query: { match_all: {} } }
    ]
  })
  say('msearch_odd', ms.responses[0].hits.total.value)
  say('msearch_top', ms.responses[1].hits.hits[0]._source.n)
  say('msearch_missing_status', ms.responses[2].status)

  // the msearch helper batches single searches into _msearch requests
  const m = client.helpers.msearch({ operations: 2 })
  const [a, b] = await Promise.all([
    m.search({ index: 'nd' }, { query: { term: { n: 5 } } }),
    m.search({ index: 'nd' }, { query: { term: { n: 6 } } })
  ])
  m.stop()
  say('msearch_helper', `${a.documents[0].n},${b.documents[0].n}`)
}

main().catch(err => {
  console.error(err && err.meta ? JSON.stringify(err.meta.body) : '', err)
  process.exit(1)
})
