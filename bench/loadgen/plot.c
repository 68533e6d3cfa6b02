/*-------------------------------------------------------------------------
 *
 * plot.c
 *	  PNG plots through gnuplot (Debian package gnuplot-nox), and the JSON
 *	  string writer the summaries share.
 *
 * A plot is a gnuplot script written beside the PNG (<png minus .png>.gp,
 * so it can be rerun or tweaked by hand) with the terminal, the output
 * and DATA (the path of its CSV) set first.  A missing gnuplot is a
 * warning, not an error: the CSVs are the results, the PNGs their picture.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

bool
lg_plot(const char *png, const char *script, const char *data, const char *data_path)
{
	char		gp[1024];
	char		cmd[2200];
	size_t		l = strlen(png);
	FILE	   *f;
	int			rc;

	(void) data;
	if (l > 4 && strcmp(png + l - 4, ".png") == 0)
		snprintf(gp, sizeof(gp), "%.*s.gp", (int) (l - 4), png);
	else
		snprintf(gp, sizeof(gp), "%s.gp", png);
	f = fopen(gp, "w");
	if (f == NULL)
	{
		lg_log("cannot write %s: %s", gp, strerror(errno));
		return false;
	}
	fprintf(f, "set terminal pngcairo size 1000,600 font 'Sans,10' noenhanced\n");
	fprintf(f, "set output '%s'\n", png);
	if (data_path)
		fprintf(f, "DATA = '%s'\n", data_path);
	fputs(script, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gnuplot '%s' 2>&1", gp);
	rc = system(cmd);
	if (rc != 0)
	{
		lg_log("gnuplot failed on %s (is gnuplot-nox installed?)", gp);
		return false;
	}
	if (!lg_opts.quiet)
		lg_log("plot: %s", png);
	return true;
}

void
lg_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++)
	{
		unsigned char ch = (unsigned char) *s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", out);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}
