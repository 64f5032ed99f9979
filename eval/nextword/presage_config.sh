#!/bin/sh
# presage_config.sh KIND DB OUT.xml — Presage's /etc/presage.xml with the smoothed n-gram predictor alone,
# on DB (text2ngram's sqlite output; "default" keeps Debian's database_en.db), 3 suggestions, no learning.
kind=$1 db=$2 out=$3
sed -e "s#<PREDICTORS>.*</PREDICTORS>#<PREDICTORS>DefaultSmoothedNgramPredictor</PREDICTORS>#" \
    -e "s#<SUGGESTIONS>6<#<SUGGESTIONS>3<#" -e "s#<ONLINE_LEARNING>yes<#<ONLINE_LEARNING>no<#" \
    $( [ "$db" != default ] && echo "-e s#/usr/share/presage/database_en.db#$db#" ) /etc/presage.xml > "$out"
