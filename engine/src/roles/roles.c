/* The roles this engine has: one line each, what it is written beside its
 * name (struct role in core/conf.h), so no code tests a role by name. */
#include "roles.h"

#include <string.h>

static const struct role roles[] = {
	{ .name = "send", .run = role_send, .generates = true, .end = true, .tx = true, .queues = true },
	{ .name = "recv", .run = role_recv, .end = true, .rx = true, .latency = true, .peer_stamps = true,
	  .queues = true },
	{ .name = "client", .run = role_client, .generates = true, .end = true, .rx = true, .tx = true,
	  .latency = true, .threads = true },
	{ .name = "server", .run = role_server, .rx = true, .tx = true },
	{ .name = "nf", .run = role_nf, .rx = true, .tx = true, .two_ports = true, .forwards = true,
	  .queues = true },
	{ .name = "tester", .run = role_tester, .generates = true, .end = true, .rx = true, .tx = true,
	  .latency = true, .two_ports = true, .path = true },
};

#define NROLES (sizeof(roles) / sizeof(roles[0]))

const struct role *role_at(size_t i)
{
	return i < NROLES ? &roles[i] : NULL;
}

const struct role *role_find(const char *name)
{
	for (size_t i = 0; i < NROLES; i++)
		if (!strcmp(roles[i].name, name))
			return &roles[i];
	return NULL;
}
