/*
 * The Redis module API's function pointers, defined once (module_api.h
 * declares them everywhere else); module.c fills them when the server
 * loads the module. On the lowest rung: every file of the module calls
 * through them.
 */
#define BKR_API_DEFINE
#include "module_api.h"
