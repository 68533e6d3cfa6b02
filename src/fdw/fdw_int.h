/*-------------------------------------------------------------------------
 *
 * fdw_int.h
 *	  Scan plan and scan state shared by fdw.c, foreign_scan.c and aggregate.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_FDW_INT_H
#define SE_FDW_INT_H

#include "nodes/execnodes.h"
#include "utils/tuplestore.h"

#include "fdw/fdw.h"

typedef enum SeScanKind
{
	SE_KIND_SCAN = 0,			/* every matching document, unscored */
	SE_KIND_SEARCH,				/* scored / sorted, optionally top-k */
	SE_KIND_AGG					/* one row per group of aggregates */
} SeScanKind;

/* What GetForeignPlan decided (ForeignScan.fdw_private, as a List). */
typedef struct SeFdwScanPlan
{
	Oid			relid;			/* the foreign table */
	int			kind;			/* SeScanKind */
	List	   *quals;			/* pushed quals, runtime values as sentinels */
	List	   *sortkeys;		/* SeSortKey * */
	bool		has_limit;
	int			limit_idx;		/* in fdw_exprs, -1 = none */
	int			offset_idx;
	List	   *attrs;			/* attnos to fill (base scans) */
	bool		for_modify;		/* feeds UPDATE/DELETE: keep pre-images */
	List	   *aggs;			/* per scan tlist entry: (SeAggKind, attno) */
} SeFdwScanPlan;

typedef struct SeScanState
{
	SeFdwScanPlan plan;
	SeFdwTable *tbl;
	EState	   *estate;
	List	   *param_states;	/* ExprStates of fdw_exprs */
	SeDslValue *values;
	int			nvalues;
	MemoryContext cxt;			/* per (re)scan */
	MemoryContext doc_cxt;		/* per document */
	Tuplestorestate *store;
	TupleTableSlot *mslot;		/* reads the tuplestore */
	bool		materialized;
	char	   *last_request;	/* the DSL sent last (EXPLAIN ANALYZE) */
	int64		total_hits;
} SeScanState;

/* in foreign_scan.c */
extern List *se_fdw_scan_plan_to_list(SeFdwScanPlan *p);
extern void se_fdw_scan_plan_from_list(List *l, SeFdwScanPlan *p);
extern void se_fdw_materialize(ForeignScanState *node, SeScanState *ss);
extern char *se_fdw_request_text(ForeignScanState *node, SeScanState *ss, bool explain);

/* in aggregate.c */
extern void se_fdw_agg_request(SeScanState *ss, const SeMapping *m, StringInfo b);
extern void se_fdw_aggregate(ForeignScanState *node, SeScanState *ss, const char *body,
							 SeEngineIndex *ei, SeSearchShard *shards, int nshards);

#endif							/* SE_FDW_INT_H */
