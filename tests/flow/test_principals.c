/* The SSH host certificate's principals (§5.4.1): the node's own name, which it sets as its
 * hostname only at the handover, after the join request and the init node's certificates
 * were made; before, gethostname() gave the kernel's "(none)" (issue 23). */
#include <string.h>
#include <unistd.h>

#include "flow/flow.h"
#include "harness.h"

TEST(host_principals_end_with_the_node_name_not_the_current_hostname)
{
	char pr[16][64], host[64] = "";
	int n = host_principals("worker-3", pr, 16);

	CHECK(n >= 1 && n <= 16);
	CHECK(!strcmp(pr[n - 1], "worker-3"));
	for (int i = 0; i < n; i++)
		CHECK(strcmp(pr[i], "(none)"));
	/* the host commands: the host's own name */
	n = host_principals(NULL, pr, 16);
	CHECK(gethostname(host, sizeof host) == 0);
	CHECK(n >= 1 && !strncmp(pr[n - 1], host, 63));
}
