/*-------------------------------------------------------------------------
 *
 * byquery.h
 *	  Update/delete-by-query, reindex, the tasks API and script runners.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_BYQUERY_H
#define SE_BYQUERY_H

#include "api/api.h"
#include "index/segment.h"

typedef struct SeByQueryOptions
{
	int			kind;			/* 1 update, 2 delete, 3 reindex */
	const char *index;			/* source index expression (not reindex) */
	const char *slices;			/* "auto" or an integer; NULL = 1 */
	const char *conflicts;		/* "abort" (default) or "proceed" */
	int			scroll_size;	/* the batch size (ES: 1000) */
	int64		max_docs;		/* ES's checks when given */
	bool		max_docs_given;
	float4		requests_per_second;	/* -1 = unlimited, else > 0 */
	bool		refresh;
	bool		wait_for_completion;
} SeByQueryOptions;

/* in byquery.c */
extern bool se_op_by_query(const SeByQueryOptions *o, const SeJson *body,
						   SeResponse *r, SeError *err);
extern bool se_op_get_task(const char *task_id, bool wait_for_completion,
						   SeResponse *r, SeError *err);
extern bool se_op_list_tasks(const char *actions, SeResponse *r, SeError *err);
extern bool se_op_cancel_task(const char *task_id, SeResponse *r, SeError *err);
extern bool se_op_rethrottle_task(const char *task_id, const float4 *rps,
								  SeResponse *r, SeError *err);
extern void se_task_workers_register(void);
extern void se_byquery_register_actions(void);
PGDLLEXPORT void se_task_worker_main(Datum arg);

/* in script_runner.c: painless subset or lang "sql", one per slice */
typedef enum SeScriptOp
{
	SE_SCRIPTOP_INDEX = 0,
	SE_SCRIPTOP_NOOP,
	SE_SCRIPTOP_DELETE
} SeScriptOp;

typedef struct SeScriptOutcome
{
	SeScriptOp	op;
	char	   *source;			/* new _source JSON, NULL = unchanged */
	size_t		source_len;
} SeScriptOutcome;

struct ScriptSpec;
typedef struct SeScriptRunner SeScriptRunner;

extern bool se_script_check(struct ScriptSpec *spec, SeError *err);
extern SeScriptRunner *se_script_runner_create(struct ScriptSpec *spec, SeError *err);
extern bool se_script_runner_run(SeScriptRunner *r, const char *index,
								 const SeDocMeta *meta, const char *src, size_t len,
								 SeScriptOutcome *out, SeError *err);
extern void se_script_runner_free(SeScriptRunner *r);

/* the script part of a request */
typedef struct ScriptSpec
{
	bool		present;
	bool		is_sql;
	char	   *source;
	SeJson	   *params;
} ScriptSpec;

#endif
