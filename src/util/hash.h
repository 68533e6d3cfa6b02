/*-------------------------------------------------------------------------
 *
 * hash.h
 *	  murmur3 and Elasticsearch document routing (pure).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_HASH_H
#define SE_HASH_H

#include "util/se_common.h"

/* MurmurHash3_x86_32 of data[0..len) with the given seed. */
extern uint32 se_murmur3_32(const void *data, size_t len, uint32 seed);

/*
 * Elasticsearch's Murmur3HashFunction.hash(String): the routing string's
 * UTF-16 code units, each written little-endian, hashed with seed 0.
 * Input is UTF-8.
 */
extern int32 se_routing_hash(const char *utf8, int len);

/* ES 7+/8 default routing_num_shards for an index of num_shards shards. */
extern int	se_routing_num_shards(int num_shards);

/*
 * Shard id for a routing value (the _routing, or the _id when none):
 * floorMod(hash, routing_num_shards) / (routing_num_shards / num_shards).
 * routing_num_shards < 1 means the default for num_shards.
 */
extern int	se_routing_shard(const char *routing, int len, int num_shards,
							 int routing_num_shards);

/*
 * Shard id in an index with index.routing_partition_size > 1 (ES
 * IndexRouting.Partitioned): the routing value picks a group of
 * partition_size consecutive routing shards, the _id picks one of them.
 */
extern int	se_routing_shard_partitioned(const char *id, int idlen,
										 const char *routing, int routinglen,
										 int num_shards, int routing_num_shards,
										 int partition_size);

#endif							/* SE_HASH_H */
