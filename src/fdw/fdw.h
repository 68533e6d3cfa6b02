/*-------------------------------------------------------------------------
 *
 * fdw.h
 *	  The search_engine foreign data wrapper: indices as foreign tables.
 *
 * One file per job, as contrib/postgres_fdw does it:
 *   option.c     options (validator), the column -> field map of a table
 *   convert.c    _source JSON <-> column values, type checks
 *   shippable.c  which expressions, operators and sort keys the engine can
 *                evaluate with PostgreSQL's semantics (and on which fields)
 *   deparse.c    quals -> ES query DSL (true / false polarity, three-valued
 *                logic), sort, _source; runtime values and EXPLAIN text
 *   shard_access.c  running a request against shard snapshots: scan, top-k
 *                search, count, aggregations request, realtime get
 *   fdw.c        the handler: planner paths (base, parameterized, sorted,
 *                LIMIT, aggregate), plans, EXPLAIN
 *   foreign_scan.c  scan execution: runtime values, the request, rows
 *   aggregate.c  GROUP BY / aggregates as an aggregations request (search/aggs.c)
 *   modify.c     INSERT / UPDATE / DELETE / COPY FROM
 *   xact.c       the transactional write buffer, commit flush and undo
 *   analyze.c    ANALYZE sampling through the engine
 *   import.c     IMPORT FOREIGN SCHEMA
 *   funcs.c      SQL-callable helpers: the @@@ operator functions, its
 *                selectivity, the DDL check run by an event trigger
 *
 * See README.md in this directory for the design.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_FDW_H
#define SE_FDW_H

#include "util/se_common.h"

#include "access/tupdesc.h"
#include "foreign/fdwapi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "nodes/pg_list.h"

#include "cluster/state.h"
#include "security/acl.h"
#include "mapping/mapping.h"
#include "search/search.h"
#include "util/json.h"

/* ---------------------------------------------------------------------
 * Tables and columns (option.c)
 * ---------------------------------------------------------------------
 */

/* What a column of a foreign table holds. */
typedef enum SeColKind
{
	SE_COL_FIELD = 0,			/* a field of _source (mapped or not) */
	SE_COL_ID,					/* _id */
	SE_COL_SCORE,				/* _score */
	SE_COL_SOURCE,				/* _source, the whole document */
	SE_COL_ROUTING,				/* _routing */
	SE_COL_SEQ_NO,				/* _seq_no */
	SE_COL_PRIMARY_TERM,		/* _primary_term */
	SE_COL_VERSION,				/* _version */
	SE_COL_INDEX,				/* _index */
	SE_COL_DROPPED				/* a dropped column */
} SeColKind;

typedef struct SeFdwColumn
{
	AttrNumber	attnum;
	char	   *name;			/* column name */
	SeColKind	kind;
	char	   *field;			/* full dotted path (SE_COL_FIELD) */
	Oid			typid;			/* column type */
	int32		typmod;
	Oid			collation;
	Oid			elemtype;		/* element type of an array column */
	bool		is_array;
} SeFdwColumn;

/* Options and column map of one foreign table. */
typedef struct SeFdwTable
{
	Oid			relid;
	char	   *relname;
	Oid			serverid;
	char	   *index;			/* option index (an alias: its one index) */
	char	   *target;			/* option index as given (an alias: its name) */
	char	   *filter;			/* the alias's filter (JSON), NULL: none */
	int			natts;
	SeFdwColumn *cols;			/* [natts], by attnum - 1 */
	int			batch_size;		/* items per bulk round at commit */
	bool		refresh;		/* refresh touched shards after commit */
	bool		op_index;		/* op_type 'index' (overwrite) for INSERT */
	bool		use_remote_estimate;
	double		fdw_startup_cost;
	double		fdw_tuple_cost;
} SeFdwTable;

#define SE_FDW_DEFAULT_BATCH_SIZE	1000
#define SE_FDW_DEFAULT_STARTUP_COST 1.0
#define SE_FDW_DEFAULT_TUPLE_COST	0.01

/* in option.c */
extern SeFdwTable *se_fdw_table_get(Oid relid);
extern SeFdwColumn *se_fdw_column_by_kind(SeFdwTable *t, SeColKind kind);
extern SeColKind se_fdw_meta_kind(const char *name);
extern const char *se_fdw_meta_name(SeColKind kind);
extern bool se_fdw_is_our_server(Oid serverid);

/* ---------------------------------------------------------------------
 * Conversion (convert.c)
 * ---------------------------------------------------------------------
 */

/* Values of a path in a parsed _source (ES semantics: dotted keys and
 * nested objects both address a path; arrays of objects flatten). */
typedef struct SeFieldValues
{
	int			n;
	const SeJson **v;
	const SeJson *single;		/* the value when the path hit exactly one
								 * JSON value (array or scalar), else NULL */
} SeFieldValues;

extern void se_fdw_lookup_path(const SeJson *doc, const char *path,
							   SeFieldValues *out);

/* Execution-time conversion info of one column. */
typedef struct SeColConv
{
	SeFdwColumn *col;
	const SeMappedField *field; /* mapping of the field, NULL if unmapped */
	FmgrInfo	inproc;			/* input function of the (element) type */
	Oid			ioparam;
	int16		elmlen;			/* array element storage */
	bool		elmbyval;
	char		elmalign;
} SeColConv;

extern void se_fdw_conv_init(SeColConv *cv, SeFdwColumn *col,
							 const SeMappedField *field);
/* Column value from the field values of a document; ERROR when the column
 * type cannot hold them (names column, table and document). */
extern Datum se_fdw_value_from_json(SeColConv *cv, const SeFieldValues *fv,
									bool *isnull);
/* Append a column value as JSON for a document being written. */
extern void se_fdw_value_to_json(SeFdwColumn *col, const SeMappedField *field,
								 Datum value, StringInfo out);
/* Append one scalar Datum of type typid as JSON. */
extern void se_fdw_datum_to_json(Oid typid, Datum value,
								 const SeMappedField *field, StringInfo out);
/* Can a column of this type hold the values of field f?  Sets a reason. */
extern bool se_fdw_type_fits(const SeFdwColumn *col, const SeMappedField *f,
							 char **reason);
/* Column type IMPORT FOREIGN SCHEMA gives a field. */
extern const char *se_fdw_suggested_type(const SeMappedField *f);
/* Check every column of t against the index mapping; ERROR on mismatch. */
extern void se_fdw_check_columns(SeFdwTable *t, const SeMapping *m);

/* Error context: which table, column and document is being converted. */
typedef struct SeConvErrorPos
{
	const char *relname;
	const char *colname;
	const char *doc_id;
} SeConvErrorPos;
extern SeConvErrorPos se_fdw_conv_pos;

/* ---------------------------------------------------------------------
 * Shippability (shippable.c)
 * ---------------------------------------------------------------------
 */

/* The @@@ operator's function, recognised by its C symbol. */
typedef enum SeMatchKind
{
	SE_MATCH_NONE = 0,
	SE_MATCH_TEXT,				/* text @@@ text: match on the column's field */
	SE_MATCH_TEXT_ARRAY,		/* text[] @@@ text */
	SE_MATCH_DSL,				/* jsonb (_source) @@@ jsonb DSL */
	SE_MATCH_ROW				/* whole row @@@ jsonb DSL */
} SeMatchKind;

extern SeMatchKind se_fdw_match_kind(Oid funcid);

/* How a column can be searched: the field to use for each kind of query. */
typedef struct SeColSearch
{
	const SeMappedField *field; /* the mapped field (NULL: unmapped) */
	const char *term_field;		/* exact terms (=, IN), or NULL */
	int			term_max_len;	/* ignore_above (UTF-16 units), 0 = none */
	bool		exists_ok;		/* exists == IS NOT NULL */
	bool		range_ok;		/* range queries match PG's order */
	bool		prefix_ok;		/* prefix == LIKE 'p%' */
	bool		sortable;		/* ES sort order == PG order */
	bool		aggregatable;	/* doc values hold exactly the values */
	/*
	 * GROUP BY: the field whose doc values the aggregations engine groups
	 * on (the field, or a text field's keyword sub-field), or NULL;
	 * agg_max_len is that sub-field's ignore_above (0 = none): longer
	 * values have no doc value there.
	 */
	const char *agg_field;
	int			agg_max_len;
} SeColSearch;

extern bool se_fdw_collation_c(Oid coll);
extern void se_fdw_col_search(const SeFdwColumn *col, const SeMapping *m,
							  Oid collation, SeColSearch *out);
/* Builtin comparison operator: "=", "<>", "<", "<=", ">", ">=" or NULL. */
extern const char *se_fdw_comparison_name(Oid opno);
/* Is value type vtype comparable with column type ctype in the engine? */
extern bool se_fdw_comparable_types(Oid ctype, Oid vtype,
									const SeMappedField *f);

/* ---------------------------------------------------------------------
 * DSL generation (deparse.c)
 * ---------------------------------------------------------------------
 */

/* Sentinel Params in stored quals stand for runtime values fdw_exprs[i]. */
#define SE_PARAM_SENTINEL_BASE	(-1000000)
#define SE_PARAM_IS_SENTINEL(p) ((p)->paramkind == PARAM_EXTERN && (p)->paramid <= SE_PARAM_SENTINEL_BASE)
#define SE_PARAM_INDEX(p)		(SE_PARAM_SENTINEL_BASE - (p)->paramid)

typedef struct SeDslValue
{
	Datum		value;
	bool		isnull;
	Oid			type;
} SeDslValue;

typedef struct SeDslContext
{
	SeFdwTable *tbl;
	const SeMapping *mapping;	/* NULL when the index does not exist */
	Index		relid;			/* varno of the table (planning) */
	Relids		outer_relids;	/* planning: other rels allowed in values */
	/* execution: values of runtime expressions (NULL: render as "$n") */
	SeDslValue *values;
	int			nvalues;
	bool		scoring;		/* out: the query scores (has @@@) */
} SeDslContext;

extern bool se_dsl_pushable(SeDslContext *ctx, Expr *clause);
extern Expr *se_dsl_prepare(SeDslContext *ctx, Expr *clause, List **runtime);
extern void se_dsl_query(SeDslContext *ctx, List *quals, StringInfo out);
extern bool se_dsl_scoring(SeDslContext *ctx, List *quals);

/* Sort keys: attno 0 = _score. */
typedef struct SeSortKey
{
	AttrNumber	attno;
	bool		desc;
	bool		nulls_first;
} SeSortKey;

extern void se_dsl_sort(SeDslContext *ctx, List *sortkeys, StringInfo out);

/* ---------------------------------------------------------------------
 * Engine access (shard_access.c)
 * ---------------------------------------------------------------------
 */

/* A document met by a scan or search. */
typedef struct SeDocRef
{
	SeSearchShard *shard;
	int			segment;
	int32		doc;
	float		score;			/* NaN when not scored */
	const char *id;				/* NULL: read it from the segment */
	StringInfo	source;			/* filtered _source of a search hit, or NULL;
								 * a doc of a remote shard: what its node sent */
	const SeDocMeta *meta;		/* a doc of a remote shard: its metadata */
} SeDocRef;

/* Return false to stop. */
typedef bool (*SeDocFn) (SeDocRef *d, void *arg);

typedef struct SeEngineIndex
{
	SeIndexMeta *im;			/* valid until the cluster state reloads */
	char	   *name;
	SeMapping  *mapping;		/* private copy */
	int			max_result_window;
} SeEngineIndex;

/* the index an index option names: itself, or an alias's one index */
extern const char *se_engine_concrete_index(const char *index);
extern char *se_engine_alias_filter(const char *name);
extern const char *se_engine_write_index(const char *name, const char **routing);
extern bool se_engine_open(const char *index, SeEngineIndex *ei, bool missing_ok);
/*
 * Index privileges: scans need read, writes write (ERROR 42501, ES 403),
 * for the role the executor checks the table's privileges as; planning
 * reads statistics only when the current role may read.
 */
extern void se_engine_authorize(const char *index, SeAclAction action, EState *estate,
								Index rtindex);
extern bool se_engine_readable(const char *index);
extern SeSearchShard *se_engine_shards(SeEngineIndex *ei, int *nshards);
extern void se_engine_refresh(SeEngineIndex *ei);
extern void se_engine_refresh_shard(SeIndexMeta *im, int shard);
extern SeSearchRequest *se_engine_parse(const char *body, int len, bool count);
/*
 * Shards on other nodes (SeSearchShard.node set) are read through the
 * transport (remote_shards.c, search_remote.c), so these take the request
 * body as well as its parsed form.
 */
extern void se_engine_scan(SeSearchRequest *req, const char *body,
						   SeSearchShard *shards, int nshards, bool with_source,
						   SeDocFn fn, void *arg);
extern int64 se_engine_search(SeSearchRequest *req, const char *body,
							  SeSearchShard *shards, int nshards, int from, int size,
							  SeDocFn fn, void *arg);
extern bool se_engine_scan_local(SeSearchRequest *req, SeSearchShard *shards,
								 int nshards, SeDocFn fn, void *arg);
/* body with "aggs": the reduced "aggregations" object and the hit count */
extern char *se_engine_aggregations(SeEngineIndex *ei, const char *body,
									SeSearchShard *shards, int nshards, int64 *total);
/* body: a search or count body; only its query counts */
extern int64 se_engine_count(const char *body, SeSearchShard *shards, int nshards);
extern int64 se_engine_live_docs(const char *index);
extern bool se_engine_source(SeDocRef *d, StringInfo out);
extern void se_engine_meta(SeDocRef *d, SeDocMeta *meta);

/* Realtime GET of one document. */
typedef struct SeEngineDoc
{
	bool		found;
	char	   *source;
	int			source_len;
	char	   *routing;
	int64		seq_no;
	int64		primary_term;
	int64		version;
} SeEngineDoc;
extern void se_engine_get(const char *index, const char *id,
						  const char *routing, SeEngineDoc *out);
extern void se_engine_get_local(SeIndexMeta *im, int shard, const char *id,
								SeEngineDoc *out);

/* in remote_shards.c: shards on other nodes */
extern bool se_engine_any_remote(SeSearchShard *shards, int nshards);
extern void se_engine_refresh_remote(SeSearchShard *shards, int nshards);
extern void se_engine_scan_remote(const char *body, SeSearchShard *shards, int nshards,
								  bool with_source, SeDocFn fn, void *arg);
extern void se_engine_get_remote(SeIndexMeta *im, int shard, const char *id,
								 SeEngineDoc *out);
extern void se_fdw_register_actions(void);
struct SeTransportCall;
extern struct SeTransportCall *se_engine_call_shard_nodes(SeSearchShard *shards, int nshards,
														  const char *action,
														  const char *prefix, int prefix_len,
														  int *ncalls);

/* ---------------------------------------------------------------------
 * Pushed-down aggregates (planned by fdw.c, run by aggregate.c)
 * ---------------------------------------------------------------------
 */
typedef enum SeAggKind
{
	SE_AGG_COUNT_STAR = 1,
	SE_AGG_COUNT,
	SE_AGG_MIN,
	SE_AGG_MAX,
	SE_AGG_SUM,
	SE_AGG_AVG,
	SE_AGG_GROUP_KEY			/* a GROUP BY column */
} SeAggKind;

/* ---------------------------------------------------------------------
 * The handler (fdw.c), writes (modify.c, xact.c)
 * ---------------------------------------------------------------------
 */

/* in modify.c */
extern void se_fdw_modify_routines(FdwRoutine *routine);
/* the pre-image registry filled by the scan of an UPDATE/DELETE target */
typedef struct SePreImage
{
	char	   *id;
	char	   *routing;
	int64		seq_no;
	int64		primary_term;
	char	   *source;
	int			source_len;
} SePreImage;
extern void se_fdw_preimage_put(EState *estate, Oid relid, SePreImage *pi);
extern SePreImage *se_fdw_preimage_get(EState *estate, Oid relid, const char *id);

/* in xact.c */
typedef enum SePendingOp
{
	SE_PENDING_CREATE,			/* INSERT (op_type create) */
	SE_PENDING_CREATE_IF_ABSENT,	/* INSERT ... ON CONFLICT DO NOTHING */
	SE_PENDING_INDEX,			/* INSERT (op_type index): overwrite */
	SE_PENDING_UPDATE,			/* UPDATE: index with if_seq_no */
	SE_PENDING_DELETE			/* DELETE: delete with if_seq_no */
} SePendingOp;

extern void se_xact_add(SePendingOp op, const char *relname, const char *index,
						const char *id, const char *routing,
						const char *source, int source_len,
						const SePreImage *pre, int batch_size, bool refresh);
extern bool se_xact_pending_doc(const char *index, const char *id, bool *deleted,
								const char **source, int *source_len);

/* in analyze.c */
extern bool se_fdw_analyze(Relation relation, AcquireSampleRowsFunc *func,
						   BlockNumber *totalpages);

/* in import.c */
extern List *se_fdw_import(ImportForeignSchemaStmt *stmt, Oid serverOid);

#endif							/* SE_FDW_H */
