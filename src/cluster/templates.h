/*-------------------------------------------------------------------------
 *
 * templates.h
 *	  Index templates in the cluster state: composable index templates,
 *	  component templates and legacy templates, as Elasticsearch 8 has
 *	  them, and what they make of a new index's create body.
 *
 * The three kinds live together in one JSON object of the state
 * (SeClusterState.templates_json, etcd key state/templates in a cluster):
 * {"index_templates":{name:{..}},"component_templates":{..},
 * "templates":{..}}, each template normalized when it is put (settings
 * flat, "index."-prefixed strings; mappings without a "_doc" wrapper).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_TEMPLATES_H
#define SE_CLUSTER_TEMPLATES_H

#include "util/se_common.h"

#include "nodes/pg_list.h"
#include "cluster/state.h"
#include "util/json.h"

typedef enum SeTemplateKind
{
	SE_TEMPLATE_INDEX,			/* PUT /_index_template/{name} */
	SE_TEMPLATE_COMPONENT,		/* PUT /_component_template/{name} */
	SE_TEMPLATE_LEGACY			/* PUT /_template/{name} */
} SeTemplateKind;

/*
 * Put template name of kind (validated here, then committed through the
 * master, which checks it against the other templates again); create:
 * refuse to replace one (ES's ?create=true).  Delete: name may be a
 * comma list or a wildcard; what it names must exist (ES's 404s).
 */
extern bool se_state_put_template(SeTemplateKind kind, const char *name, const SeJson *body,
								  bool create, SeError *err);
extern bool se_state_delete_template(SeTemplateKind kind, const char *name, SeError *err);

/* The master's side of a forwarded put/delete (state.c's se_state_run_op). */
extern bool se_state_template_op(const char *op, const char *name, const SeJson *body,
								 bool flag, SeError *err);

/* The stored templates of kind: an object name -> template (never NULL). */
extern const SeJson *se_templates_of(const SeClusterState *st, SeTemplateKind kind);

/* A stored template as ES's GET shows it (settings nested). */
extern void se_template_write(SeTemplateKind kind, const SeJson *t, StringInfo out);

/*
 * The create body of index: the templates that match its name merged, the
 * request's body over them (settings by key, mappings' properties by
 * field, aliases by name).  Composable index templates win over legacy
 * ones: the highest priority one that matches, its components in order;
 * with none, every legacy template that matches, lowest order first.
 * Returns body itself (maybe NULL) when no template matches; NULL with
 * err set on an error.  *matched (if not NULL)
 * gets the composable template's name (NULL: none); *overlapping (if not
 * NULL) the other composable templates that match, as names.
 */
extern const SeJson *se_templates_apply(const SeClusterState *st, const char *index,
										const SeJson *body, const char **matched,
										List **overlapping, SeError *err);

#endif							/* SE_CLUSTER_TEMPLATES_H */
