/* SPDX-License-Identifier: Apache-2.0 */
/* Partitioning a placed graph by device: every edge whose value lives on another device than
 * its reader's gets a copy node on the reader's device, one per value and device however many
 * nodes there read it. A function argument's device is known only at the call, so an op that
 * reads one copies it then if it must. */
#ifndef TP_GRAPH_PARTITION_H
#define TP_GRAPH_PARTITION_H

#include "graph/graph.h"

tp_status_t *tp_graph_partition(tp_graph_t *graph);

#endif
