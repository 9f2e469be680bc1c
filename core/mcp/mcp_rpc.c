/*
 * The MCP server's methods (mcp_int.h): what a request in a session
 * asks, answered by its file (tools, resources) or here.
 */
#include <stdio.h>
#include <string.h>

#include "mcp_int.h"

int
sg_mcp_call(struct sg_mcp *m, const char *method, const json_t *params,
    json_t **result, struct sg_mcp_err *e)
{
	*result = NULL;
	if (strcmp(method, "ping") == 0)
		*result = json_object();
	else if (strcmp(method, "tools/list") == 0) {
		/* One page: no cursor of ours to continue from. */
		if (json_object_get(params, "cursor") != NULL)
			return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Invalid "
			    "params: unknown cursor");
		*result = json_pack("{s:o}", "tools", sg_mcp_tools(m->env->cfg));
	}
	else if (strcmp(method, "tools/call") == 0)
		return sg_mcp_tool_call(m, params, result, e);
	else if (strcmp(method, "resources/list") == 0)
		return sg_mcp_res_list(m, params, result, e);
	else if (strcmp(method, "resources/read") == 0)
		return sg_mcp_res_read(m, params, result, e);
	else if (strcmp(method, "resources/templates/list") == 0)
		*result = sg_mcp_res_templates();
	else if (strcmp(method, "initialize") == 0)
		return sg_mcp_err(e, SG_MCP_INVALID_REQUEST, "Invalid Request: "
		    "this session is initialized already");
	else
		return sg_mcp_err(e, SG_MCP_NO_METHOD, "Method not found: %.200s",
		    method);
	return *result != NULL ? 0 : sg_mcp_err(e, SG_MCP_INTERNAL,
	    "Internal error: out of memory");
}
