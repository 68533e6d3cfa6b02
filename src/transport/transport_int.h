/*-------------------------------------------------------------------------
 *
 * transport_int.h
 *	  What peer.c and actions.c share: the reply's encoding, the settings.
 *
 * A reply is one bytea: 'R' followed by the handler's bytes, or 'E'
 * followed by the ES error as status (4 bytes, big-endian), type, NUL,
 * reason.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_TRANSPORT_INT_H
#define SE_TRANSPORT_INT_H

#include "transport/transport.h"

#define SE_TRANSPORT_REPLY_OK		'R'
#define SE_TRANSPORT_REPLY_ERROR	'E'

/* search_engine.transport_conninfo (guc.c) */
extern char *se_transport_conninfo;

/* in actions.c */
extern void se_transport_reply_decode(SeTransportCall *c, const char *data, int len);
/* the node's transport counters (ES's rx/tx), both sides */
extern void se_transport_count_rx(size_t bytes);
extern void se_transport_count_tx(size_t bytes);

#endif							/* SE_TRANSPORT_INT_H */
