/* brindlectl lab export-clab (lab_clab.c); kept apart from lab.h so the two grow independently. */
#ifndef BRINDLE_CTL_LAB_CLAB_H
#define BRINDLE_CTL_LAB_CLAB_H

#include "ctl.h"

int lab_cmd_export_clab(struct ctl *c, int argc, char **argv);

#endif
