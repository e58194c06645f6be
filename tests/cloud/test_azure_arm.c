/* The ARM readers (agent/cloud/azure_arm.c) on bodies of the shapes the ARM REST reference and
 * the managed-identity page document: the token (its expiry, a refusal never naming the token),
 * list pages with nextLink and the UID tag filter, a VM's computerName and NIC, the primary
 * IP configuration, a public IP, ARM's error body, the provider ID's parts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cloud/azure_arm.h"
#include "harness.h"

#define P                                                                                          \
	"/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/constel-rg/providers/" \
	"Microsoft.Compute/virtualMachineScaleSets/"

TEST(azure_token_is_read_with_its_expiry_and_refused_when_expired)
{
	static const char ok[] = "{\"access_token\":\"eyJ0eXAi.e30.c2ln\",\"client_id\":\"c\","
				 "\"expires_in\":\"86399\",\"expires_on\":\"1795832874\","
				 "\"resource\":\"https://management.azure.com/\",\"token_type\":"
				 "\"Bearer\"}";
	static const char old[] = "{\"access_token\":\"SECRETTOKEN\",\"expires_on\":\"1000\","
				  "\"token_type\":\"Bearer\"}";
	static const char spaced[] = "{\"access_token\":\"a b\",\"expires_on\":\"1795832874\"}";
	struct secret *t = NULL;
	time_t exp = 0;
	char err[160];

	CHECK(azure_parse_token(ok, strlen(ok), 1795000000, &t, &exp, err, sizeof err) == 0);
	CHECK(t && t->len == 17 && !memcmp(t->bytes, "eyJ0eXAi.e30.c2ln", 17));
	CHECK(exp == 1795832874);
	secret_free(t);
	CHECK(azure_parse_token(old, strlen(old), 1795000000, &t, &exp, err, sizeof err) ==
	      -EKEYEXPIRED);
	CHECK(!t && !strstr(err, "SECRETTOKEN"));
	CHECK(azure_parse_token(spaced, strlen(spaced), 1795000000, &t, &exp, err, sizeof err) ==
	      -EINVAL);
	CHECK(strstr(err, "not printable"));
	CHECK(azure_parse_token("[]", 2, 0, &t, &exp, err, sizeof err) == -EINVAL);
}

TEST(azure_list_pages_keep_the_clusters_items_and_their_next_link)
{
	static const char sets[] =
	    "{\"value\":[{\"name\":\"cp\",\"tags\":{\"constellation-uid\":\"c0ffee42\"}},"
	    "{\"name\":\"other\",\"tags\":{\"constellation-uid\":\"x\"}},{\"name\":\"untagged\"}],"
	    "\"nextLink\":\"https://management.azure.com" P
	    "?api-version=2023-03-01&$skiptoken=1\"}";
	static const char vms[] =
	    "{\"value\":[{\"name\":\"cp_3\",\"id\":\"" P
	    "cp/virtualMachines/3\",\"instanceId\":\"3\","
	    "\"tags\":{\"constellation-role\":\"control-plane\"},\"properties\":{\"osProfile\":"
	    "{\"computerName\":\"cp-3\"},\"networkProfile\":{\"networkInterfaces\":[{\"id\":\"" P
	    "cp/virtualMachines/3/networkInterfaces/cp-nic\"}]}}},{\"name\":\"noid\"}]}";
	static const char lbs[] =
	    "{\"value\":[{\"name\":\"lb\",\"tags\":{\"constellation-uid\":\"c0ffee42\"},"
	    "\"properties\":{\"frontendIPConfigurations\":[{\"properties\":{\"privateIPAddress\":"
	    "\"10.0.0.4\"}},{\"properties\":{\"publicIPAddress\":{\"id\":\"/subscriptions/s/"
	    "resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/lb-ip\"}}}]}}]}";
	char names[4][96], next[512], err[160];
	struct azure_vm v[2];
	struct azure_lb l[1];
	int n = 0;

	CHECK(azure_parse_list(sets, strlen(sets), AZURE_LIST_SCALE_SETS, "c0ffee42", names, 4, &n,
			       next, sizeof next, err, sizeof err) == 0);
	CHECK(n == 1 && !strcmp(names[0], "cp"));
	CHECK(strstr(next, "$skiptoken=1"));
	n = 0;
	CHECK(azure_parse_list(vms, strlen(vms), AZURE_LIST_VMS, NULL, v, 2, &n, next, sizeof next,
			       err, sizeof err) == 0);
	CHECK(n == 1 && !strcmp(v[0].instance_id, "3") && !strcmp(v[0].name, "cp-3"));
	CHECK(!strcmp(v[0].role, "control-plane") && !strcmp(v[0].nic, "cp-nic") && !next[0]);
	n = 0;
	CHECK(azure_parse_list(lbs, strlen(lbs), AZURE_LIST_LBS, "c0ffee42", l, 1, &n, next,
			       sizeof next, err, sizeof err) == 0);
	CHECK(n == 1 && !strcmp(l[0].pip, "lb-ip") && !strcmp(l[0].private_ip, "10.0.0.4"));
	n = 0;
	CHECK(azure_parse_list("{\"value\":{}}", 12, AZURE_LIST_LBS, "u", l, 1, &n, next,
			       sizeof next, err, sizeof err) == -EINVAL);
	/* a NIC name that would change the URL it goes into */
	static const char evil[] =
	    "{\"value\":[{\"id\":\"x\",\"instanceId\":\"3\",\"properties\":{\"osProfile\":"
	    "{\"computerName\":\"c\"},\"networkProfile\":{\"networkInterfaces\":[{\"id\":"
	    "\"a/n?api-version=1\"}]}}}]}";
	n = 0;
	CHECK(azure_parse_list(evil, strlen(evil), AZURE_LIST_VMS, NULL, v, 2, &n, next,
			       sizeof next, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "not a plain name"));
	/* more of the cluster's scale sets than the caller keeps */
	n = 0;
	CHECK(azure_parse_list(sets, strlen(sets), AZURE_LIST_SCALE_SETS, "c0ffee42", names, 0, &n,
			       next, sizeof next, err, sizeof err) == -ENOSPC);
}

TEST(azure_nic_public_ip_error_and_provider_id)
{
	static const char nic[] =
	    "{\"properties\":{\"ipConfigurations\":[{\"properties\":{\"privateIPAddress\":"
	    "\"10.9.0.5\",\"primary\":false}},{\"properties\":{\"privateIPAddress\":\"10.9.0.2\","
	    "\"primary\":true}}]}}";
	static const char e403[] =
	    "{\"error\":{\"code\":\"AuthorizationFailed\",\"message\":\"The client does not have "
	    "authorization to perform action\"}}";
	static const char pip[] = "{\"properties\":{\"ipAddress\":\"20.1.2.3\"}}";
	char ip[48], err[160], code[64], msg[64], sub[64], rg[96], ss[96], inst[16];

	CHECK(azure_parse_nic(nic, strlen(nic), ip, sizeof ip, err, sizeof err) == 0);
	CHECK(!strcmp(ip, "10.9.0.2"));
	CHECK(azure_parse_nic("{}", 2, ip, sizeof ip, err, sizeof err) == -EINVAL);
	CHECK(azure_parse_public_ip(pip, strlen(pip), ip, sizeof ip, err, sizeof err) == 0);
	CHECK(!strcmp(ip, "20.1.2.3"));
	CHECK(azure_parse_arm_error(e403, strlen(e403), code, sizeof code, msg, sizeof msg) == 0);
	CHECK(!strcmp(code, "AuthorizationFailed") && !strncmp(msg, "The client does", 15));
	CHECK(azure_parse_arm_error("{}", 2, code, sizeof code, msg, sizeof msg) == -ENOENT);
	CHECK(azure_split_provider_id("azure://" P "constel-scale-set-worker/virtualMachines/0",
				      sub, sizeof sub, rg, sizeof rg, ss, sizeof ss, inst,
				      sizeof inst) == 0);
	CHECK(!strcmp(sub, "8d10da13-8125-4ba9-a717-bf7490507b3d") && !strcmp(rg, "constel-rg"));
	CHECK(!strcmp(ss, "constel-scale-set-worker") && !strcmp(inst, "0"));
	/* a VM that is no scale set's, and a provider ID that would change the URL */
	CHECK(azure_split_provider_id("azure:///subscriptions/s/resourceGroups/rg/providers/"
				      "Microsoft.Compute/virtualMachines/vm",
				      sub, sizeof sub, rg, sizeof rg, ss, sizeof ss, inst,
				      sizeof inst) == -EINVAL);
	CHECK(azure_split_provider_id("azure://" P "ss/virtualMachines/0?x=1", sub, sizeof sub, rg,
				      sizeof rg, ss, sizeof ss, inst, sizeof inst) == -EINVAL);
}

/* virtualMachineScaleSetVMs.Get (rest/api/compute/virtual-machine-scale-set-vms/get): one VM
 * object, read as a list item: computerName, role tag, ID, its first NIC's name */
TEST(azure_one_scale_set_vm_is_read_as_constellations_self)
{
	static const char vm[] =
	    "{\"name\":\"constel-scale-set-worker_0\",\"id\":\"" P
	    "constel-scale-set-worker/virtualMachines/0\",\"instanceId\":\"0\","
	    "\"tags\":{\"constellation-role\":\"worker\"},\"properties\":{\"osProfile\":"
	    "{\"computerName\":\"constel-worker-0\"},\"networkProfile\":{\"networkInterfaces\":"
	    "[{\"id\":\"" P
	    "constel-scale-set-worker/virtualMachines/0/networkInterfaces/nic-0\"}]}}}";
	static const char no_id[] = "{\"name\":\"x\",\"properties\":{}}";
	static const char list[] = "{\"value\":[]}";
	struct azure_vm v;
	char err[160];

	CHECK(azure_parse_vm(vm, strlen(vm), &v, err, sizeof err) == 0);
	CHECK(!strcmp(v.name, "constel-worker-0") && !strcmp(v.role, "worker"));
	CHECK(!strcmp(v.instance_id, "0") && !strcmp(v.nic, "nic-0"));
	CHECK(!strcmp(v.id, P "constel-scale-set-worker/virtualMachines/0"));
	CHECK(azure_parse_vm(no_id, strlen(no_id), &v, err, sizeof err) == -EINVAL);
	CHECK(azure_parse_vm(list, strlen(list), &v, err, sizeof err) == -EINVAL);
	CHECK(azure_parse_vm("[1]", 3, &v, err, sizeof err) == -EINVAL);
}
