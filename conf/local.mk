dist_sysconf_DATA = %reldir%/cuasync.ini
