/*
 * sg_upload: a multipart/form-data upload (OpenAI's POST /v1/files, a
 * container's files) read as it arrives. Its one "file" part goes to a
 * new file in a directory, counted against a limit as it comes, so a body
 * too large is refused at the first byte past the limit and never held in
 * memory; its small text fields ("purpose", ...) are kept.
 */
#ifndef SG_UPLOAD_H
#define SG_UPLOAD_H

#include "http.h"

#define SG_UPLOAD_FIELDS	8	/* text fields kept; more are refused */
#define SG_UPLOAD_VALUE		256	/* bytes of a field's value */

struct sg_upload {
	/* Given. */
	const char	*dir;		/* made (0700) when missing */
	const char	*name;		/* the file's name in dir; NAME.part
					 * while it is written */
	long long	 max_bytes;
	/* Found. */
	char		 filename[256];	/* as the client named it, checked */
	long long	 bytes;
	size_t		 nfields;
	struct {
		char	 name[64];
		char	 value[SG_UPLOAD_VALUE];
	}		 fields[SG_UPLOAD_FIELDS];
	int		 fd;		/* the part file while it is written */
	int		 have_file;
};

/*
 * Read req's body (req->in) into u: 0 with the file written to
 * dir/NAME.part and closed (then sg_upload_commit or sg_upload_discard),
 * or -1 with err (nothing left behind). The answer to a refused body is
 * OpenAI's: 413 past max_bytes, 400 for a malformed body, a missing file
 * part or a filename that is not a plain name.
 */
int	 sg_upload_recv(struct sg_req *, struct sg_upload *, struct sg_error *);
/* Borrowed value of field name, or NULL. */
const char *sg_upload_field(const struct sg_upload *, const char *name);
/* dir/NAME.part becomes dir/NAME: 0, or -1 with err. */
int	 sg_upload_commit(struct sg_upload *, struct sg_error *);
void	 sg_upload_discard(struct sg_upload *);
/* Whether name may be a file's name: 1..255 bytes of UTF-8, no '/', no
 * '\\', no control character, not "." or "..". */
int	 sg_upload_name_ok(const char *name);

#endif
