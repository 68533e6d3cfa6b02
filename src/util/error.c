/*-------------------------------------------------------------------------
 *
 * error.c
 *	  SeError: Elasticsearch-shaped errors for pure modules.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <stdarg.h>

/* Record an error; the first error wins so callers keep the root cause. */
void
se_error_set(SeError *err, int status, const char *type, const char *fmt,...)
{
	StringInfoData buf;
	va_list		args;

	if (err == NULL || err->type != NULL)
		return;
	initStringInfo(&buf);
	for (;;)
	{
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	err->status = status;
	err->type = type;
	err->reason = buf.data;
}

#ifndef SE_FRONTEND

#include "utils/elog.h"

/* ERROR with err's SQLSTATE, its reason, and the ES type in errdetail. */
void
se_error_raise(const SeError *err)
{
	ereport(ERROR,
			(errcode(se_error_sqlstate(err->type)),
			 errmsg("%s", err->reason ? err->reason : err->type),
			 errdetail("%s", err->type)));
	pg_unreachable();
}

/* SQLSTATE for an ES error type: standard codes where one fits. */
int
se_error_sqlstate(const char *type)
{
	static const struct
	{
		const char *type;
		int			code;
	}			map[] = {
		{"index_not_found_exception", ERRCODE_UNDEFINED_OBJECT},
		{"security_exception", ERRCODE_INSUFFICIENT_PRIVILEGE},
		{"resource_not_found_exception", ERRCODE_UNDEFINED_OBJECT},
		{"document_missing_exception", ERRCODE_NO_DATA_FOUND},
		{"invalid_index_name_exception", ERRCODE_INVALID_NAME},
		{"invalid_alias_name_exception", ERRCODE_INVALID_NAME},
		{"aliases_not_found_exception", ERRCODE_UNDEFINED_OBJECT},
		{"resource_already_exists_exception", ERRCODE_DUPLICATE_OBJECT},
		{"parsing_exception", ERRCODE_SYNTAX_ERROR},
		{"x_content_parse_exception", ERRCODE_SYNTAX_ERROR},
		{"json_parse_exception", ERRCODE_SYNTAX_ERROR},
		{"parse_exception", ERRCODE_SYNTAX_ERROR},
		{"illegal_argument_exception", ERRCODE_INVALID_PARAMETER_VALUE},
		{"action_request_validation_exception", ERRCODE_INVALID_PARAMETER_VALUE},
		{"mapper_parsing_exception", ERRCODE_INVALID_PARAMETER_VALUE},
		{"strict_dynamic_mapping_exception", ERRCODE_INVALID_PARAMETER_VALUE},
		{"query_shard_exception", ERRCODE_INVALID_PARAMETER_VALUE},
		{"script_exception", ERRCODE_INVALID_PARAMETER_VALUE},
		{"too_many_clauses", ERRCODE_STATEMENT_TOO_COMPLEX},
		{"too_many_nested_clauses", ERRCODE_STATEMENT_TOO_COMPLEX},
		{"index_closed_exception", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE},
		{"version_conflict_engine_exception", ERRCODE_T_R_SERIALIZATION_FAILURE},
		{"es_rejected_execution_exception", ERRCODE_INSUFFICIENT_RESOURCES},
		{"index_corrupted_exception", ERRCODE_INDEX_CORRUPTED},
		{"no_shard_available_action_exception", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE},
		{"shard_failed_exception", ERRCODE_INTERNAL_ERROR},
		{"unsupported_operation_exception", ERRCODE_FEATURE_NOT_SUPPORTED},
		{"connect_transport_exception", ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION},
		{"node_disconnected_exception", ERRCODE_CONNECTION_FAILURE},
		{"receive_timeout_transport_exception", ERRCODE_CONNECTION_FAILURE},
		{"remote_transport_exception", ERRCODE_CONNECTION_EXCEPTION},
		{"action_not_found_transport_exception", ERRCODE_FEATURE_NOT_SUPPORTED},
		{"etcd_unavailable_exception", ERRCODE_CONNECTION_FAILURE},
		{"etcd_exception", ERRCODE_SYSTEM_ERROR},	/* etcd answered an error */
		{"master_not_discovered_exception", ERRCODE_CONNECTION_FAILURE},
		{"process_cluster_event_timeout_exception", ERRCODE_QUERY_CANCELED},
		{"illegal_state_exception", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE},
		/* index.blocks.*: the index is read-only (429 at the flood stage) */
		{"cluster_block_exception", ERRCODE_READ_ONLY_SQL_TRANSACTION},
	};
	int			i;

	for (i = 0; i < lengthof(map); i++)
		if (strcmp(map[i].type, type) == 0)
			return map[i].code;
	return ERRCODE_INTERNAL_ERROR;
}

#endif
